"""recall's version, in a module of its own: the package, the server and world exports all name
it, and none of them may import the package `recall` (which imports them) to learn it."""

__version__ = "0.1.0"

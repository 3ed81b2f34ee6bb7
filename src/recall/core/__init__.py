"""The pure core: plain data in, plain data out; no I/O, no clock, no globals."""

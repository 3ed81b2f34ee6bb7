"""Versioned schema of the SQLite store. Append new versions; never edit an applied one."""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE worlds (
            id          TEXT PRIMARY KEY COLLATE NOCASE,
            name        TEXT NOT NULL,
            turn_limit  INTEGER,
            created_at  REAL NOT NULL
        );
        -- `key` is a compact stand-in for (world_id, id) in the hot delivery rows.
        CREATE TABLE participants (
            key         INTEGER PRIMARY KEY,
            world_id    TEXT NOT NULL REFERENCES worlds(id),
            id          TEXT NOT NULL COLLATE NOCASE,
            kind        TEXT NOT NULL CHECK (kind IN ('agent', 'human')),
            profile     TEXT NOT NULL DEFAULT '{}',
            created_at  REAL NOT NULL,
            UNIQUE (world_id, id)
        );
        -- '' is the world's default chat, so that it can be part of keys and indexes.
        CREATE TABLE chats (
            world_id    TEXT NOT NULL REFERENCES worlds(id),
            id          TEXT NOT NULL,
            created_at  REAL NOT NULL,
            PRIMARY KEY (world_id, id)
        );
        CREATE TABLE messages (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            world_id        TEXT NOT NULL REFERENCES worlds(id),
            chat_id         TEXT NOT NULL DEFAULT '',
            sender          TEXT NOT NULL,
            sender_type     TEXT NOT NULL,
            channel         TEXT,
            parent_id       INTEGER,
            content         TEXT NOT NULL,
            mentions        TEXT NOT NULL DEFAULT '[]',
            addressed       TEXT NOT NULL DEFAULT '[]',
            metadata        TEXT NOT NULL DEFAULT '{}',
            created_at      REAL NOT NULL,
            idempotency_key TEXT
        );
        CREATE INDEX messages_by_chat ON messages (world_id, chat_id, id);
        CREATE UNIQUE INDEX messages_by_idempotency_key
            ON messages (world_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
        -- An agent's memory: one row per message delivered to it (own = 0, its inbox) or
        -- written by it (own = 1). Two B-trees per row (the key and the unread index) and
        -- integer keys: this is the table every post fans out into, so it is kept narrow.
        CREATE TABLE deliveries (
            agent_key   INTEGER NOT NULL,  -- participants.key of the agent
            message_id  INTEGER NOT NULL,
            own         INTEGER NOT NULL DEFAULT 0,
            read_at     REAL,
            PRIMARY KEY (agent_key, message_id)
        ) WITHOUT ROWID;
        CREATE INDEX deliveries_unread ON deliveries (agent_key, message_id) WHERE own = 0 AND read_at IS NULL;
        CREATE TABLE memory_counts (
            agent_key   INTEGER NOT NULL,
            chat_id     TEXT NOT NULL,
            n           INTEGER NOT NULL,
            PRIMARY KEY (agent_key, chat_id)
        ) WITHOUT ROWID;
        CREATE TABLE turn_counters (
            world_id    TEXT NOT NULL,
            agent_id    TEXT NOT NULL,
            count       INTEGER NOT NULL,
            PRIMARY KEY (world_id, agent_id)
        ) WITHOUT ROWID;
        CREATE TABLE observations (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            world_id    TEXT NOT NULL,
            agent_id    TEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('observation', 'action')),
            sim_time    REAL NOT NULL,
            data        TEXT NOT NULL,
            created_at  REAL NOT NULL
        );
        CREATE INDEX observations_by_agent ON observations (world_id, agent_id, kind, id);
        """,
    ),
    (
        2,
        """
        -- Worlds belong to a tenant ('' when the server runs without API keys).
        ALTER TABLE worlds ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
        -- An agent's private key-value memory (remember / recall / forget).
        CREATE TABLE agent_memory (
            agent_key   INTEGER NOT NULL,
            key         TEXT NOT NULL,
            value       TEXT NOT NULL,
            updated_at  REAL NOT NULL,
            expires_at  REAL,
            PRIMARY KEY (agent_key, key)
        ) WITHOUT ROWID;
        -- Context once: per agent session and chat, the newest message already sent as context.
        CREATE TABLE context_sessions (
            agent_key    INTEGER NOT NULL,
            session      TEXT NOT NULL,
            chat_id      TEXT NOT NULL,
            last_sent_id INTEGER NOT NULL,
            refreshed_at REAL NOT NULL,
            PRIMARY KEY (agent_key, session, chat_id)
        ) WITHOUT ROWID;
        """,
    ),
    (
        3,
        """
        -- The unread index doubled the pages a post to many agents writes. Instead each agent
        -- keeps a low-water mark: every delivery below it is read, so the unread scan starts
        -- there on the primary key.
        DROP INDEX deliveries_unread;
        CREATE TABLE inbox_marks (
            agent_key   INTEGER PRIMARY KEY,
            low         INTEGER NOT NULL
        );
        """,
    ),
    (
        4,
        """
        -- Facts (spec §4), one row per fact. A scope is 'user:ID', 'agent:WORLD/AGENT' or
        -- 'world:ID' within a tenant.
        CREATE TABLE facts (
            id          INTEGER PRIMARY KEY,
            tenant      TEXT NOT NULL,
            scope       TEXT NOT NULL,
            content     TEXT NOT NULL,
            category    TEXT NOT NULL,
            confidence  REAL NOT NULL,
            source      TEXT NOT NULL,
            avoid       TEXT,
            created_at  REAL NOT NULL,
            updated_at  REAL NOT NULL
        );
        CREATE INDEX facts_by_scope ON facts (tenant, scope, id);
        -- A scope's summary sections (work context, personal context, top of mind, ...), as JSON.
        CREATE TABLE fact_sections (
            tenant      TEXT NOT NULL,
            scope       TEXT NOT NULL,
            sections    TEXT NOT NULL,
            updated_at  REAL NOT NULL,
            PRIMARY KEY (tenant, scope)
        ) WITHOUT ROWID;
        -- Long-term memories: notes with a type and an importance of 1-10, shared in a world
        -- (owner '') or private to one agent (owner = the agent's id).
        CREATE TABLE notes (
            id          INTEGER PRIMARY KEY,
            world_id    TEXT NOT NULL REFERENCES worlds(id),
            owner       TEXT NOT NULL COLLATE NOCASE,
            type        TEXT NOT NULL,
            content     TEXT NOT NULL,
            importance  INTEGER NOT NULL,
            chat_id     TEXT,
            metadata    TEXT NOT NULL,
            created_at  REAL NOT NULL
        );
        CREATE INDEX notes_by_owner ON notes (world_id, owner, importance, id);
        -- The search index over messages, notes and facts. `space` partitions it: a world's id
        -- for what belongs to a world, 'user:ID' for a user's facts. FTS5 (BM25) and the
        -- vectors (sqlite-vec, created by the store once the extension is loaded) are keyed by
        -- the item's id. Messages are copied in by the indexer, in batches, after they are
        -- posted. `embedded` says whether its vector is stored yet.
        CREATE TABLE search_items (
            id          INTEGER PRIMARY KEY,
            tenant      TEXT NOT NULL,
            space       TEXT NOT NULL COLLATE NOCASE,
            kind        TEXT NOT NULL CHECK (kind IN ('message', 'memory', 'fact')),
            source_id   INTEGER NOT NULL,
            owner       TEXT NOT NULL COLLATE NOCASE,
            chat_id     TEXT,
            sender      TEXT,
            importance  INTEGER,
            created_at  REAL NOT NULL,
            text        TEXT NOT NULL,
            embedded    INTEGER NOT NULL DEFAULT 0,
            UNIQUE (kind, source_id)
        );
        CREATE INDEX search_items_unembedded ON search_items (id) WHERE embedded = 0;
        CREATE VIRTUAL TABLE search_fts USING fts5(
            text, content='search_items', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2'
        );
        -- How far the indexer has copied messages (the highest message id indexed).
        CREATE TABLE search_state (
            name        TEXT PRIMARY KEY,
            value       INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
    ),
    (
        5,
        """
        -- Keyword search also sees the turn before a message (same world and chat): a reply
        -- like "Yes, last Tuesday" is found by the question it answers. `context` is a second
        -- FTS column, weighted lower than the message's own text. Hits still show `text`.
        -- FTS5 tables cannot gain columns, so search_fts is rebuilt from search_items.
        ALTER TABLE search_items ADD COLUMN context TEXT NOT NULL DEFAULT '';
        UPDATE search_items SET context = COALESCE((
            SELECT p.text FROM search_items p
            WHERE p.kind = 'message' AND p.source_id = (
                SELECT MAX(before.id) FROM messages m
                JOIN messages before
                  ON before.world_id = m.world_id AND before.chat_id IS m.chat_id AND before.id < m.id
                WHERE m.id = search_items.source_id)
        ), '') WHERE kind = 'message';
        DROP TABLE search_fts;
        CREATE VIRTUAL TABLE search_fts USING fts5(
            text, context, content='search_items', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO search_fts (search_fts) VALUES ('rebuild');
        """,
    ),
    (
        6,
        """
        -- World ids are unique per tenant (spec §8): two tenants may each have a world 'support'.
        -- The old primary key becomes `key`, the world's name in the store, which every per-world
        -- row (participants, chats, messages, notes, counters, ...) goes on referencing (SQLite
        -- renames the references with the column). `id` is what the tenant calls the world.
        -- Existing worlds keep key = id, and a new world whose id is already a key gets another
        -- key ending with '/ID' (see rows.new_world_key). No semicolons in comments: the
        -- migration runner splits statements on them.
        ALTER TABLE worlds RENAME COLUMN id TO key;
        ALTER TABLE worlds ADD COLUMN id TEXT NOT NULL DEFAULT '' COLLATE NOCASE;
        UPDATE worlds SET id = key;
        CREATE UNIQUE INDEX worlds_by_tenant ON worlds (tenant, id);
        """,
    ),
    (
        7,
        """
        -- The search index is searched in a copy in memory (search/local.py) that each process
        -- keeps in step with the rows written since it last looked: `changed` is the value of
        -- the counter search_state.search_changed when the item was inserted or embedded, and a
        -- deleted item leaves (id, changed) in search_deleted. An item's vector is its
        -- `embedding` (float32 bytes). The copy holds the words too, so the FTS5 table goes. The
        -- sqlite-vec table of earlier versions (search_vec) held vectors of the fp32 model and is
        -- dropped when the new model first opens the index.
        DROP TABLE search_fts;
        ALTER TABLE search_items ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE search_items ADD COLUMN embedding BLOB;
        CREATE INDEX search_items_by_change ON search_items (changed);
        CREATE TABLE search_deleted (
            id          INTEGER NOT NULL,
            changed     INTEGER NOT NULL
        );
        CREATE INDEX search_deleted_by_change ON search_deleted (changed);
        """,
    ),
    (
        8,
        """
        -- Context once for the recalled past: a digest of the block last sent in the session.
        ALTER TABLE context_sessions ADD COLUMN recalled_digest TEXT NOT NULL DEFAULT '';
        """,
    ),
    (
        9,
        """
        -- Where an extracted fact came from: the messages its extraction read. Erasing a person
        -- removes the facts any of its messages were read for, in whatever scope they went.
        CREATE TABLE fact_sources (
            fact_id     INTEGER NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            message_id  INTEGER NOT NULL,
            PRIMARY KEY (fact_id, message_id)
        ) WITHOUT ROWID;
        CREATE INDEX fact_sources_by_message ON fact_sources (message_id);
        """,
    ),
    (
        10,
        """
        -- Long-term memories change in place and may expire. `updated_at` is when one was last
        -- changed (its created_at until then), `expires_at` when it stops being returned and is
        -- deleted (epoch seconds, NULL for never). The partial index holds only the memories
        -- that expire, so finding those past their time stays cheap.
        ALTER TABLE notes ADD COLUMN updated_at REAL NOT NULL DEFAULT 0;
        UPDATE notes SET updated_at = created_at;
        ALTER TABLE notes ADD COLUMN expires_at REAL;
        CREATE INDEX notes_by_expiry ON notes (expires_at) WHERE expires_at IS NOT NULL;
        -- A world's expired memories, looked up before each read of its memories.
        CREATE INDEX notes_by_world_expiry ON notes (world_id, expires_at) WHERE expires_at IS NOT NULL;
        """,
    ),
    (
        11,
        """
        -- Recorded model calls (store/call_log.py): what each call's context held, by id and
        -- version, compressed in `body`, read per agent newest first, trimmed by age and count.
        CREATE TABLE model_calls (
            id          TEXT PRIMARY KEY,
            world_id    TEXT NOT NULL COLLATE NOCASE,
            agent_key   INTEGER NOT NULL,  -- participants.key of the agent
            chat_id     TEXT NOT NULL DEFAULT '',
            trigger_id  INTEGER,
            created_at  REAL NOT NULL,
            source      TEXT NOT NULL,
            digest      TEXT NOT NULL,
            -- Who said the messages it quotes, lowercased, each between tabs ("\tmaria\tbob\t"):
            -- an erase rewrites only the calls that quote the person (before `body`, so a
            -- scan of it never reads the body's overflow pages).
            senders     TEXT NOT NULL DEFAULT '',
            body        BLOB NOT NULL,
            -- What came of the call, as its caller reports it: NULL (not reported), 'answered'
            -- or 'failed' (with `error`, e.g. the model server down).
            outcome     TEXT,
            error       TEXT
        );
        CREATE INDEX model_calls_by_agent ON model_calls (agent_key, created_at, id);
        CREATE INDEX model_calls_by_world ON model_calls (world_id);
        """,
    ),
    (
        12,
        """
        -- Metadata filters (search/metadata.py): an item's metadata as searches filter on it, the
        -- scalar top-level keys as canonical JSON text (NULL: none, as for every fact). Items
        -- indexed before get their message's or memory's when the index is next opened
        -- (SearchIndex._backfill_metadata), from the marker left here when there are any.
        ALTER TABLE search_items ADD COLUMN metadata TEXT;
        INSERT INTO search_state (name, value) SELECT 'metadata_backfill', 0
            WHERE EXISTS (SELECT 1 FROM search_items WHERE kind <> 'fact');
        """,
    ),
    (
        13,
        """
        -- Keyed memories (store/keyed.py): a memory an adapter addresses by a namespace (its
        -- labels joined by '.', which no label holds) and a key, unique per world and owner
        -- (the LangGraph store's items), found by that address, by a namespace prefix (a range
        -- of the index) or newest write first. Items written before carry their address in
        -- their metadata only: the store adopts them when it first opens (`unkeyed` finds them).
        ALTER TABLE notes ADD COLUMN namespace TEXT;
        ALTER TABLE notes ADD COLUMN item_key TEXT;
        CREATE UNIQUE INDEX notes_by_address ON notes (world_id, owner, namespace, item_key)
            WHERE item_key IS NOT NULL;
        CREATE INDEX notes_keyed_by_update ON notes (world_id, owner, updated_at, id) WHERE item_key IS NOT NULL;
        CREATE INDEX notes_unkeyed ON notes (world_id, owner) WHERE type = 'langgraph' AND item_key IS NULL;
        -- The replies of a message (few have a parent): deleting a message moves its replies
        -- to its parent without reading every newer message of its world.
        CREATE INDEX messages_by_parent ON messages (parent_id) WHERE parent_id IS NOT NULL;
        """,
    ),
    (
        14,
        """
        -- Each agent's memory count of a chat keeps the first message it heard there: a walk
        -- down the chat's messages for what the agent heard stops there (0: at the start).
        -- Counts from before take their agent's first delivery, read by the key kept until now.
        ALTER TABLE memory_counts ADD COLUMN first_id INTEGER NOT NULL DEFAULT 0;
        UPDATE memory_counts SET first_id = COALESCE(
            (SELECT MIN(d.message_id) FROM deliveries d WHERE d.agent_key = memory_counts.agent_key), 0);
        -- Deliveries in the order (bucket, message, agent), the bucket being agent_key >> 4
        -- (store/rows.py, DELIVERY_BUCKET_BITS): a post's rows for many agents fill a few runs
        -- of pages, not one run per agent.
        CREATE TABLE deliveries_by_bucket (
            bucket      INTEGER NOT NULL,
            message_id  INTEGER NOT NULL,
            agent_key   INTEGER NOT NULL,
            own         INTEGER NOT NULL DEFAULT 0,
            read_at     REAL,
            PRIMARY KEY (bucket, message_id, agent_key)
        ) WITHOUT ROWID;
        INSERT INTO deliveries_by_bucket (bucket, message_id, agent_key, own, read_at)
            SELECT agent_key >> 4, message_id, agent_key, own, read_at FROM deliveries;
        DROP TABLE deliveries;
        ALTER TABLE deliveries_by_bucket RENAME TO deliveries;
        """,
    ),
    (
        15,
        """
        -- Bumped by every write to worlds and participants (as on PostgreSQL): another process's
        -- caches of those rows are dropped when it moved, not at every commit of another
        -- connection (data_version moves with the index worker's vectors too).
        CREATE TABLE store_version (
            one         INTEGER PRIMARY KEY CHECK (one = 1),
            version     INTEGER NOT NULL
        );
        INSERT INTO store_version (one, version) VALUES (1, 0);
        """,
    ),
    (
        16,
        """
        -- A tool result or a LangChain system message is for its agent alone (its metadata's
        -- tool_result_for or langchain_system_for): stored before, it was delivered to every
        -- agent of its world, and the others' deliveries go (no other agent heard it), their
        -- memory counts down by what each lost.
        CREATE TEMP TABLE private_gone AS
            SELECT d.agent_key AS agent_key, d.message_id AS message_id, m.chat_id AS chat_id
              FROM messages m JOIN deliveries d ON d.message_id = m.id
             WHERE m.sender_type = 'system'
               AND (m.metadata LIKE '%"tool_result_for"%' OR m.metadata LIKE '%"langchain_system_for"%')
               AND d.agent_key NOT IN (
                   SELECT p.key FROM participants p
                    WHERE p.world_id = m.world_id
                      AND p.id = COALESCE(json_extract(m.metadata, '$.tool_result_for'),
                                          json_extract(m.metadata, '$.langchain_system_for')));
        DELETE FROM deliveries
         WHERE EXISTS (SELECT 1 FROM private_gone g
                        WHERE g.agent_key = deliveries.agent_key AND g.message_id = deliveries.message_id);
        UPDATE memory_counts
           SET n = n - (SELECT COUNT(*) FROM private_gone g
                         WHERE g.agent_key = memory_counts.agent_key AND g.chat_id = memory_counts.chat_id)
         WHERE EXISTS (SELECT 1 FROM private_gone g
                        WHERE g.agent_key = memory_counts.agent_key AND g.chat_id = memory_counts.chat_id);
        DELETE FROM memory_counts WHERE n <= 0;
        DROP TABLE private_gone;
        -- A recorded call that keeps a copy of the messages as sent is marked in `senders` (a
        -- deletion rewrites those): calls stored before may hold one, so all are marked, and a
        -- deletion takes the mark off those it finds without.
        UPDATE model_calls SET senders = CASE WHEN senders = '' THEN char(9) || '#full' || char(9)
                                              ELSE senders || '#full' || char(9) END
        """,
    ),
    (
        17,
        """
        -- Queued fact extractions (store/extraction_jobs.py), kept so that one not yet run when
        -- its process closes runs when the store is next opened: one row per (tenant, scope,
        -- thread), naming what to read again (world key, agent, chat), the request's token,
        -- the process that will run it ('' once handed back) and when it was due. (IF NOT
        -- EXISTS: a test of an earlier migration runs it again, as a store rolled back might.)
        CREATE TABLE IF NOT EXISTS extraction_jobs (
            tenant      TEXT NOT NULL,
            scope       TEXT NOT NULL,
            thread      TEXT NOT NULL,
            world_id    TEXT NOT NULL COLLATE NOCASE,
            agent_id    TEXT NOT NULL COLLATE NOCASE,
            chat_id     TEXT NOT NULL DEFAULT '',
            token       TEXT NOT NULL UNIQUE,
            owner       TEXT NOT NULL DEFAULT '',
            due_at      REAL NOT NULL,
            queued_at   REAL NOT NULL,
            PRIMARY KEY (tenant, scope, thread)
        );
        """,
    ),
]

LATEST_VERSION = MIGRATIONS[-1][0]

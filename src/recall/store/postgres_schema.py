"""Versioned schema of the PostgreSQL store. Append new versions; never change what an applied
one does (versions 2 and 12 were made to work without pgvector, leaving what they do with it).

The tables mirror the SQLite store's (sqlite_schema.py) so both behave the same: times are
epoch seconds (double precision), JSON is text, and world and participant ids compare without
regard to case (CITEXT, as SQLite's COLLATE NOCASE).
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE EXTENSION IF NOT EXISTS citext;
        CREATE TABLE worlds (
            id          CITEXT PRIMARY KEY,
            name        TEXT NOT NULL,
            turn_limit  INTEGER,
            created_at  DOUBLE PRECISION NOT NULL,
            tenant      TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE participants (
            key         BIGSERIAL PRIMARY KEY,
            world_id    CITEXT NOT NULL REFERENCES worlds(id),
            id          CITEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('agent', 'human')),
            profile     TEXT NOT NULL DEFAULT '{}',
            created_at  DOUBLE PRECISION NOT NULL,
            UNIQUE (world_id, id)
        );
        CREATE TABLE chats (
            world_id    CITEXT NOT NULL REFERENCES worlds(id),
            id          TEXT NOT NULL,
            created_at  DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (world_id, id)
        );
        CREATE TABLE messages (
            id              BIGINT PRIMARY KEY,
            world_id        CITEXT NOT NULL REFERENCES worlds(id),
            chat_id         TEXT NOT NULL DEFAULT '',
            sender          TEXT NOT NULL,
            sender_type     TEXT NOT NULL,
            channel         TEXT,
            parent_id       BIGINT,
            content         TEXT NOT NULL,
            mentions        TEXT NOT NULL DEFAULT '[]',
            addressed       TEXT NOT NULL DEFAULT '[]',
            metadata        TEXT NOT NULL DEFAULT '{}',
            created_at      DOUBLE PRECISION NOT NULL,
            idempotency_key TEXT
        );
        CREATE SEQUENCE messages_id_seq OWNED BY messages.id;
        CREATE INDEX messages_by_chat ON messages (world_id, chat_id, id);
        CREATE UNIQUE INDEX messages_by_idempotency_key
            ON messages (world_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
        CREATE TABLE deliveries (
            agent_key   BIGINT NOT NULL,
            message_id  BIGINT NOT NULL,
            own         SMALLINT NOT NULL DEFAULT 0,
            read_at     DOUBLE PRECISION,
            PRIMARY KEY (agent_key, message_id)
        );
        CREATE TABLE inbox_marks (
            agent_key   BIGINT PRIMARY KEY,
            low         BIGINT NOT NULL
        );
        CREATE TABLE memory_counts (
            agent_key   BIGINT NOT NULL,
            chat_id     TEXT NOT NULL,
            n           BIGINT NOT NULL,
            PRIMARY KEY (agent_key, chat_id)
        );
        CREATE TABLE turn_counters (
            world_id    CITEXT NOT NULL,
            agent_id    CITEXT NOT NULL,
            count       INTEGER NOT NULL,
            PRIMARY KEY (world_id, agent_id)
        );
        CREATE TABLE observations (
            id          BIGSERIAL PRIMARY KEY,
            world_id    CITEXT NOT NULL,
            agent_id    CITEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('observation', 'action')),
            sim_time    DOUBLE PRECISION NOT NULL,
            data        TEXT NOT NULL,
            created_at  DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX observations_by_agent ON observations (world_id, agent_id, kind, id);
        CREATE TABLE agent_memory (
            agent_key   BIGINT NOT NULL,
            key         TEXT NOT NULL,
            value       TEXT NOT NULL,
            updated_at  DOUBLE PRECISION NOT NULL,
            expires_at  DOUBLE PRECISION,
            PRIMARY KEY (agent_key, key)
        );
        CREATE TABLE context_sessions (
            agent_key    BIGINT NOT NULL,
            session      TEXT NOT NULL,
            chat_id      TEXT NOT NULL,
            last_sent_id BIGINT NOT NULL,
            refreshed_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (agent_key, session, chat_id)
        );
        CREATE TABLE facts (
            id          BIGSERIAL PRIMARY KEY,
            tenant      TEXT NOT NULL,
            scope       TEXT NOT NULL,
            content     TEXT NOT NULL,
            category    TEXT NOT NULL,
            confidence  DOUBLE PRECISION NOT NULL,
            source      TEXT NOT NULL,
            avoid       TEXT,
            created_at  DOUBLE PRECISION NOT NULL,
            updated_at  DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX facts_by_scope ON facts (tenant, scope, id);
        CREATE TABLE fact_sections (
            tenant      TEXT NOT NULL,
            scope       TEXT NOT NULL,
            sections    TEXT NOT NULL,
            updated_at  DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (tenant, scope)
        );
        CREATE TABLE notes (
            id          BIGSERIAL PRIMARY KEY,
            world_id    CITEXT NOT NULL REFERENCES worlds(id),
            owner       CITEXT NOT NULL,
            type        TEXT NOT NULL,
            content     TEXT NOT NULL,
            importance  INTEGER NOT NULL,
            chat_id     TEXT,
            metadata    TEXT NOT NULL,
            created_at  DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX notes_by_owner ON notes (world_id, owner, importance, id);
        -- Bumped by every write to worlds and participants: other replicas' caches of those
        -- rows compare it (the store's change_version) and re-read when it moved.
        CREATE TABLE store_version (
            one         BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
            version     BIGINT NOT NULL
        );
        INSERT INTO store_version (one, version) VALUES (true, 0);
        """,
    ),
    (
        2,
        """
        -- The search index (see search/postgres.py): keyword search on a generated tsvector
        -- (the message's own words weigh A, the turn before it B), vectors in a pgvector column
        -- added with the embedder's dimension on first use, with an HNSW index.
        -- pgvector is created where the server has it and this role may create it (it is not a
        -- trusted extension: a superuser's act); elsewhere version 12 makes the column bytea.
        -- Until then this line required pgvector, so every store past it without pgvector is
        -- one made since, and every store made before has it: the outcome is the same for them.
        DO $$
        BEGIN
            IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
                CREATE EXTENSION IF NOT EXISTS vector;
            END IF;
        EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
            NULL;  -- not this role's to create, or installed in part: the vectors go in bytea
        END $$;
        CREATE TABLE search_items (
            id          BIGSERIAL PRIMARY KEY,
            tenant      TEXT NOT NULL,
            space       CITEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('message', 'memory', 'fact')),
            source_id   BIGINT NOT NULL,
            owner       CITEXT NOT NULL,
            chat_id     TEXT,
            sender      TEXT,
            importance  INTEGER,
            created_at  DOUBLE PRECISION NOT NULL,
            text        TEXT NOT NULL,
            context     TEXT NOT NULL DEFAULT '',
            embedded    BOOLEAN NOT NULL DEFAULT false,
            tsv         TSVECTOR GENERATED ALWAYS AS (
                setweight(to_tsvector('english', text), 'A') || setweight(to_tsvector('english', context), 'B')
            ) STORED,
            UNIQUE (kind, source_id)
        );
        CREATE INDEX search_items_tsv ON search_items USING GIN (tsv);
        CREATE INDEX search_items_space ON search_items (tenant, space, kind);
        CREATE INDEX search_items_unembedded ON search_items (id) WHERE NOT embedded;
        CREATE TABLE search_state (
            name        TEXT PRIMARY KEY,
            value       BIGINT NOT NULL
        );
        """,
    ),
    (
        3,
        """
        -- Rate limits shared by every replica: one token bucket per agent (see PostgresStore.rate_hit).
        CREATE TABLE rate_buckets (
            world_id    CITEXT NOT NULL,
            agent_id    CITEXT NOT NULL,
            tokens      DOUBLE PRECISION NOT NULL,
            at          DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (world_id, agent_id)
        );
        """,
    ),
    (
        4,
        """
        -- World ids are unique per tenant (spec §8), as in the SQLite store's version 6: the old
        -- primary key becomes `key`, which every per-world row goes on referencing (foreign keys
        -- follow a renamed column); `id` is what the tenant calls the world.
        ALTER TABLE worlds RENAME COLUMN id TO key;
        ALTER TABLE worlds ADD COLUMN id CITEXT;
        UPDATE worlds SET id = key;
        ALTER TABLE worlds ALTER COLUMN id SET NOT NULL;
        CREATE UNIQUE INDEX worlds_by_tenant ON worlds (tenant, id);
        """,
    ),
    (
        5,
        """
        -- Context once for the recalled past: a digest of the block last sent in the session.
        ALTER TABLE context_sessions ADD COLUMN recalled_digest TEXT NOT NULL DEFAULT '';
        """,
    ),
    (
        6,
        """
        -- Where an extracted fact came from, as in the SQLite store's version 9.
        CREATE TABLE fact_sources (
            fact_id     BIGINT NOT NULL REFERENCES facts (id) ON DELETE CASCADE,
            message_id  BIGINT NOT NULL,
            PRIMARY KEY (fact_id, message_id)
        );
        CREATE INDEX fact_sources_by_message ON fact_sources (message_id);
        """,
    ),
    (
        7,
        """
        -- Long-term memories change in place and may expire, as in the SQLite store's version 10.
        ALTER TABLE notes ADD COLUMN updated_at DOUBLE PRECISION;
        UPDATE notes SET updated_at = created_at;
        ALTER TABLE notes ALTER COLUMN updated_at SET NOT NULL;
        ALTER TABLE notes ADD COLUMN expires_at DOUBLE PRECISION;
        CREATE INDEX notes_by_expiry ON notes (expires_at) WHERE expires_at IS NOT NULL;
        -- A world's expired memories, looked up before each read of its memories.
        CREATE INDEX notes_by_world_expiry ON notes (world_id, expires_at) WHERE expires_at IS NOT NULL;
        """,
    ),
    (
        8,
        """
        -- Recorded model calls, as in the SQLite store's version 11.
        CREATE TABLE model_calls (
            id          TEXT PRIMARY KEY,
            world_id    CITEXT NOT NULL,
            agent_key   BIGINT NOT NULL,
            chat_id     TEXT NOT NULL DEFAULT '',
            trigger_id  BIGINT,
            created_at  DOUBLE PRECISION NOT NULL,
            source      TEXT NOT NULL,
            digest      TEXT NOT NULL,
            senders     TEXT NOT NULL DEFAULT '',
            body        BYTEA NOT NULL,
            outcome     TEXT,
            error       TEXT
        );
        CREATE INDEX model_calls_by_agent ON model_calls (agent_key, created_at, id);
        CREATE INDEX model_calls_by_world ON model_calls (world_id);
        """,
    ),
    (
        9,
        """
        -- Metadata filters, as in the SQLite store's version 12: the scalar top-level keys of an
        -- item's metadata (NULL: none), equality answered by the GIN index. Items indexed before
        -- get theirs when the index is next opened, from the marker left here.
        ALTER TABLE search_items ADD COLUMN metadata JSONB;
        CREATE INDEX search_items_metadata ON search_items USING GIN (metadata jsonb_path_ops);
        INSERT INTO search_state (name, value) SELECT 'metadata_backfill', 0
            WHERE EXISTS (SELECT 1 FROM search_items WHERE kind <> 'fact');
        """,
    ),
    (
        10,
        """
        -- Keyed memories, as in the SQLite store's version 13; the namespace compares byte by
        -- byte (COLLATE "C"), so that a prefix is one range of the index whatever the locale.
        ALTER TABLE notes ADD COLUMN namespace TEXT COLLATE "C";
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
        11,
        """
        -- Searches by words run on a copy in memory (`search/copy.py`), as on SQLite since its
        -- version 7: ts_rank ranked every match of a query (~100 ms for a common word at
        -- 100,000 items). The copy keeps in step from the rows written since it last looked:
        -- `changed` is the value of the counter search_state.search_changed when the item was
        -- written, and a deleted item leaves (id, changed) in search_deleted. The generated
        -- tsvector and its GIN index, read by nothing now, go (every insert paid for them).
        ALTER TABLE search_items ADD COLUMN changed BIGINT NOT NULL DEFAULT 0;
        CREATE INDEX search_items_by_change ON search_items (changed);
        CREATE TABLE search_deleted (
            id          BIGINT NOT NULL,
            changed     BIGINT NOT NULL
        );
        CREATE INDEX search_deleted_by_change ON search_deleted (changed);
        ALTER TABLE search_items DROP COLUMN tsv;
        """,
    ),
    (
        12,
        """
        -- Searches by vectors run on the copy in memory too (as on SQLite): the HNSW walk
        -- took 3-5 ms a query at 100,000 items, the copy's graph well under one. The vectors
        -- stay in the column, the store's record of them (the copy reads them); its HNSW
        -- index, read by nothing now, goes (every vector stored paid for it). The column is
        -- there from now on, of no fixed length, so the copy's reads can always name it: of
        -- pgvector's type where the database has the extension, else bytea (the same floats,
        -- big-endian; search/postgres.py reads and writes either). A column there already is
        -- pgvector's (version 2 required it then).
        DROP INDEX IF EXISTS search_items_embedding;
        DO $$
        BEGIN
            EXECUTE 'ALTER TABLE search_items ADD COLUMN IF NOT EXISTS embedding '
                || CASE WHEN EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector') THEN 'vector' ELSE 'bytea' END;
        END $$;
        """,
    ),
    (
        13,
        """
        -- Each agent's memory count of a chat keeps the first message it heard there (as on
        -- SQLite, version 14; 0: unknown, from the start).
        ALTER TABLE memory_counts ADD COLUMN IF NOT EXISTS first_id BIGINT NOT NULL DEFAULT 0;
        UPDATE memory_counts SET first_id = COALESCE(
            (SELECT MIN(d.message_id) FROM deliveries d WHERE d.agent_key = memory_counts.agent_key), 0);
        -- Deliveries keyed in the order (bucket, message, agent), the bucket being
        -- agent_key >> 4 (store/rows.py, DELIVERY_BUCKET_BITS): a post's index entries for many
        -- agents go into a few runs of the index's pages, not one run per agent.
        ALTER TABLE deliveries ADD COLUMN IF NOT EXISTS bucket BIGINT;
        UPDATE deliveries SET bucket = agent_key >> 4;
        ALTER TABLE deliveries ALTER COLUMN bucket SET NOT NULL;
        ALTER TABLE deliveries DROP CONSTRAINT deliveries_pkey;
        ALTER TABLE deliveries ADD PRIMARY KEY (bucket, message_id, agent_key);
        """,
    ),
    (
        14,
        """
        -- A tool result or a LangChain system message is for its agent alone (as on SQLite,
        -- version 16): the deliveries to every other agent, made before, go, their memory
        -- counts down by what each lost; every recorded call is marked as maybe holding a copy
        -- of the messages as sent.
        CREATE TEMP TABLE private_gone ON COMMIT DROP AS
            SELECT d.agent_key AS agent_key, d.message_id AS message_id, m.chat_id AS chat_id
              FROM messages m JOIN deliveries d ON d.message_id = m.id
             WHERE m.sender_type = 'system'
               AND (m.metadata LIKE '%"tool_result_for"%' OR m.metadata LIKE '%"langchain_system_for"%')
               AND d.agent_key NOT IN (
                   SELECT p.key FROM participants p
                    WHERE p.world_id = m.world_id
                      AND p.id = COALESCE(m.metadata::jsonb ->> 'tool_result_for',
                                          m.metadata::jsonb ->> 'langchain_system_for')::citext);
        DELETE FROM deliveries d USING private_gone g
         WHERE g.agent_key = d.agent_key AND g.message_id = d.message_id;
        UPDATE memory_counts c SET n = c.n - g.lost
          FROM (SELECT agent_key, chat_id, COUNT(*) AS lost FROM private_gone GROUP BY agent_key, chat_id) g
         WHERE g.agent_key = c.agent_key AND g.chat_id = c.chat_id;
        DELETE FROM memory_counts WHERE n <= 0;
        UPDATE model_calls SET senders = CASE WHEN senders = '' THEN chr(9) || '#full' || chr(9)
                                              ELSE senders || '#full' || chr(9) END;
        """,
    ),
    (
        15,
        """
        -- Queued fact extractions, as in the SQLite store's version 17.
        CREATE TABLE IF NOT EXISTS extraction_jobs (
            tenant      TEXT NOT NULL,
            scope       TEXT NOT NULL,
            thread      TEXT NOT NULL,
            world_id    CITEXT NOT NULL,
            agent_id    CITEXT NOT NULL,
            chat_id     TEXT NOT NULL DEFAULT '',
            token       TEXT NOT NULL UNIQUE,
            owner       TEXT NOT NULL DEFAULT '',
            due_at      DOUBLE PRECISION NOT NULL,
            queued_at   DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (tenant, scope, thread)
        );
        """,
    ),
]

LATEST_VERSION = MIGRATIONS[-1][0]

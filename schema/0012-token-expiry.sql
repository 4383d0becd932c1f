-- 0012-token-expiry.sql - bearer tokens get an id, an expiry, a
-- revocation and a last-used time (docs/api.md "Tokens and identity")
--
-- Forward-only: 0001 to 0011 are released and never edited.
--
-- id: a small number to name a token by (list, revoke) without its
-- secret; prefix: the token's first characters, so that its holder can
-- tell which one it is; expires_ms: 0 never (the tokens made before this
-- migration, and `--ttl never`); revoked_ms: 0 not revoked; last_used_ms:
-- written at most once a minute per token (0: never used since).
ALTER TABLE tokens ADD COLUMN id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN prefix TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN revoked_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tokens ADD COLUMN last_used_ms INTEGER NOT NULL DEFAULT 0;

-- The existing tokens are numbered in the order they were made.
UPDATE tokens SET id = (SELECT count(*) FROM tokens t
    WHERE t.created_ms < tokens.created_ms
       OR (t.created_ms = tokens.created_ms AND t.hash <= tokens.hash));
CREATE UNIQUE INDEX tokens_id ON tokens (id);

-- The API keeps verified tokens in memory for a few seconds (api/token_cache.py): any change
-- that could refuse a token (revoke, role, expiry, secret, delete) tells every node at once.
-- last_used_at (written by the API itself, once a minute) does not.
CREATE FUNCTION tokens_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ipamd_tokens', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER tokens_changed_update AFTER UPDATE ON tokens
    FOR EACH ROW
    WHEN ((OLD.role, OLD.revoked_at, OLD.expires_at, OLD.secret_hash)
          IS DISTINCT FROM (NEW.role, NEW.revoked_at, NEW.expires_at, NEW.secret_hash))
    EXECUTE FUNCTION tokens_changed();
CREATE TRIGGER tokens_changed_delete AFTER DELETE ON tokens
    FOR EACH STATEMENT EXECUTE FUNCTION tokens_changed();
CREATE TRIGGER tokens_changed_truncate AFTER TRUNCATE ON tokens
    FOR EACH STATEMENT EXECUTE FUNCTION tokens_changed();

-- Every lead-api keeps the fingerprints of the tokens that exist, so a well-formed but unknown
-- token is refused without a database round trip (docs/reliability.md, "Hostile input"; docs/reliability.md).
-- A new token is announced to every replica at commit; the payload is the first 8 bytes of its
-- SHA-256, in hex: a fingerprint, not the token.
CREATE FUNCTION qualifier_token_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('qualifier_tokens', encode(substr(NEW.token_hash, 1, 8), 'hex'));
    RETURN NULL;
END $$;

CREATE TRIGGER api_tokens_notify AFTER INSERT ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION qualifier_token_created();

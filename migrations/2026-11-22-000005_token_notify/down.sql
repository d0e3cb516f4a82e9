DROP TRIGGER api_tokens_notify ON api_tokens;
DROP FUNCTION qualifier_token_created();

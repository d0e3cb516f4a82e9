DROP FUNCTION qualifier_admit(bytea, float8, float8);

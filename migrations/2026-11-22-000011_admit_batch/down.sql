DROP FUNCTION qualifier_admit_batch(bytea[], int[], float8, float8);

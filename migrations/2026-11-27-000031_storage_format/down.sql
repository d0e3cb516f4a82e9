DROP TABLE storage_format;

"""``ltr partition``'s work: whole-query Parquet partitions written, their manifest, the verb's options and its progress."""

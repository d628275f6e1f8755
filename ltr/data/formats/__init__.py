"""Readers of ranking files by format: LETOR/SVMlight text, TREC qrels and runs, Parquet and CSV tables, and what a file's name says."""

"""Data actions on a table: optimize (merge, sort, compact deletes) and the commit bookkeeping."""

"""The files tqadmin keeps on disk: private folders and files written whole (exports, backups, reports), the
audit log appended, and SQLite files: how a user of one opens it (``access``), one file many processes write
(``sqlite``), and a file read without writing a byte beside it (``sqlite_readonly``).
"""

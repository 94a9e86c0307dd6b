"""Accounts: staff users and their sessions, password hashing, the audit log (partner keys too)."""

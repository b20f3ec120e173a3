"""Execution of one claimed run: its context, its handler, and the outcome it reports."""

"""Scheduled and on-demand work: catch-up, consolidation, archival, reflection.

Jobs append events with ids derived from (job, window), so a re-run after a crash is a no-op.
"""

__all__: list[str] = []

"""Missions in, result bundles out: the data a mission runs against, kept in a
content-addressed, read-only cache (`snapshots`)."""

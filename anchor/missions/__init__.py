"""Missions in, result bundles out (issue 11): the data a mission runs against, kept in a
content-addressed, read-only cache (`snapshots`)."""

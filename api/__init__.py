"""The REST verification service (FastAPI). Started by `anchor serve`."""

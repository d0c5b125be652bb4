"""The application service: anchoring a path (`stamp`), the journal service and its flusher
(`service`, `flusher`), the proof files of a confirmed batch (`proofs`), one file's proof out of a
folder's (`prove`). Nothing is imported here: each entry point pays only for what it uses."""

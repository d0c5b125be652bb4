"""Settings: the settings model (`model`: every `ANCHOR_*` variable, typed, described once, read once
at a door), the config files (`config`), the resolved settings a command works with (`session`), and
the docs table made from the model (`docs`). Ground layer: imports only `anchor.errors` and
`anchor.layout`, never the chain."""

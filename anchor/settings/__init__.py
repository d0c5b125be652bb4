"""Settings: the config files (`config`) and the process's resolved settings and environment
(`session`). Ground layer: imports only `anchor.errors`, never the chain."""

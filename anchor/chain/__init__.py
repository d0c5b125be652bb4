"""Everything that touches an EVM node: toolchain, compiler, local node, keys, deployment, registry."""

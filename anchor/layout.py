"""The data directory's layout, in one place.

Why one owner: the names under the data dir were joined onto it in fifteen modules, so a reader had to
know where a writer put things, and a layout change meant a hunt. Every path under the data dir is a
property or a method here; `tests/project/test_layering.py` refuses a name joined onto a data dir anywhere
else. Ground layer, beside errors and files (the journal, which reads no settings, needs its file's
name too): paths only, nothing is created or read here.

    <data dir>/
      journal.sqlite            the journal (SQLite backend)
      batches/<chain>/<registry>/<root>.tree
                                each batch this data dir anchored, once: its anchor and its Merkle tree;
                                an item's proof is derived from it and the journal (anchor.anchoring.proofs)
      proofs/<digest>.json      the per-item proof files of data dirs written before the batch store
      deployments/<chain>.json  the registry recorded for each chain (and <chain>.source.json)
      chain/                    the embedded local chain's state and pid
      missions.sqlite           dispatched missions and their runs
      missions/<output>/        one mission's run: result/, run.log, stage.json, result.anchor.json
      snapshots/                the content-addressed snapshot cache
      research/                 the default search work dir
      receipt.key               the calendar's receipt key (0600), receipt.signers.json its history
      service.json              what `anchor serve` recorded about itself (its public URL)
      mlflow/<run id>.anchor.json  the last proof of each MLflow run stamped from here (anchor.mlflow)
      mlflow/promotions/<digest>.json  each model promotion made from here, its record (anchor.mlflow)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from anchor.record import Value


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class DataDir(Value):
    root: Path

    @property
    def journal(self) -> Path:
        return self.root / "journal.sqlite"

    @property
    def proofs(self) -> Path:
        return self.root / "proofs"

    def proof(self, digest: str | bytes) -> Path:
        """A manifest's proof file as data dirs wrote them before the batch store (one per item); read,
        never written now. `digest` as bytes or hex, with or without 0x."""
        body = digest.hex() if isinstance(digest, bytes) else digest.lower().removeprefix("0x")
        return self.proofs / f"{body}.json"

    @property
    def batches(self) -> Path:
        return self.root / "batches"

    def batch_tree(self, chain_id: int, registry: str, root: bytes) -> Path:
        """One anchored batch's tree: by chain and registry, since two registries may anchor one root."""
        return self.batches / str(chain_id) / registry.lower() / f"{root.hex()}.tree"

    @property
    def deployments(self) -> Path:
        return self.root / "deployments"

    def deployment(self, chain_id: int) -> Path:
        return self.deployments / f"{chain_id}.json"

    def deployment_source(self, chain_id: int) -> Path:
        return self.deployments / f"{chain_id}.source.json"

    @property
    def chain(self) -> Path:
        return self.root / "chain"

    @property
    def missions_db(self) -> Path:
        return self.root / "missions.sqlite"

    @property
    def missions(self) -> Path:
        return self.root / "missions"

    def mission(self, output: str) -> Path:
        """One mission's own directory (its output identity, with `/` made `_`)."""
        return self.missions / output.replace("/", "_")

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    @property
    def research(self) -> Path:
        return self.root / "research"

    @property
    def receipt_key(self) -> Path:
        return self.root / "receipt.key"

    @property
    def receipt_signers(self) -> Path:
        return self.root / "receipt.signers.json"

    @property
    def service_record(self) -> Path:
        return self.root / "service.json"

    @property
    def stat_cache(self) -> Path:
        """One stat cache per stamped root (anchor.manifest.statcache): what a re-stamp need not read."""
        return self.root / "stat-cache"

    def mlflow_run(self, run_id: str) -> Path:
        """The proof of the last stamp of MLflow run `run_id` from this data dir (anchor.mlflow keeps it
        beside the one it writes into the run: a run whose store is rewritten keeps its proof here)."""
        return self.root / "mlflow" / f"{run_id}.anchor.json"

    def mlflow_promotion(self, digest: str) -> Path:
        """A model promotion's record (anchor.mlflow.registry), kept by the data dir that promoted it:
        what the explorer's promotion page shows of it (the chain holds its digest)."""
        return self.root / "mlflow" / "promotions" / f"{digest.lower().removeprefix('0x')}.json"

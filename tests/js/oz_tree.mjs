// Reference: OpenZeppelin's own StandardMerkleTree. Prints {root, proofs: {item: [siblings]}} as JSON.
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";

const items = JSON.parse(process.argv[2]);
const tree = StandardMerkleTree.of(items.map((x) => [x]), ["bytes32"]);
const proofs = {};
for (const [i, v] of tree.entries()) proofs[v[0]] = tree.getProof(i);
console.log(JSON.stringify({ root: tree.root, proofs }));

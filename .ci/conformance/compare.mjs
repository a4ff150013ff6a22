// Compares two result folders written by `conformance server -o DIR`: the run
// straight against the everything-server and the run through the gate.
//
//   node compare.mjs LABEL DIRECT_DIR GATE_DIR
//
// A scenario passes when its checks.json parses and holds no FAILURE check
// (the CLI's own ✓/✗ rule; WARNING and INFO do not fail it). The gate must
// pass exactly the scenarios the direct run passes. Exit status 1 on any
// difference, or when the direct run passed nothing (the harness is broken).
import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";

const [label, directDir, gateDir] = process.argv.slice(2);
if (!gateDir) {
	console.error("usage: node compare.mjs LABEL DIRECT_DIR GATE_DIR");
	process.exit(2);
}

// scenario name -> {passed, checks}
function load(dir) {
	const out = new Map();
	if (!existsSync(dir)) return out;
	for (const ent of readdirSync(dir, { withFileTypes: true })) {
		if (!ent.isDirectory()) continue;
		const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(ent.name);
		if (!m) continue;
		const name = m[1];
		let checks = null;
		try {
			checks = JSON.parse(readFileSync(join(dir, ent.name, "checks.json"), "utf8"));
			if (!Array.isArray(checks)) checks = null;
		} catch {
			checks = null;
		}
		const passed = checks !== null && !checks.some((c) => c.status === "FAILURE");
		const prev = out.get(name);
		out.set(name, {
			passed: passed && (prev ? prev.passed : true),
			checks: [...(prev ? prev.checks : []), ...(checks ?? [{ id: "checks.json", status: "FAILURE", errorMessage: "missing or unreadable checks.json" }])],
		});
	}
	return out;
}

const direct = load(directDir);
const gate = load(gateDir);
const passedIn = (m) => new Set([...m].filter(([, v]) => v.passed).map(([k]) => k));
const dPass = passedIn(direct);
const gPass = passedIn(gate);

console.log(`${label}: direct ${dPass.size}/${direct.size} scenarios passed; through the gate ${gPass.size}/${gate.size}`);
const directFails = [...direct.keys()].filter((k) => !dPass.has(k)).sort();
if (directFails.length) {
	console.log(`${label}: failing direct too (not the gate's doing, not required): ${directFails.join(", ")}`);
}

const lost = [...dPass].filter((k) => !gPass.has(k)).sort();
const gained = [...gPass].filter((k) => !dPass.has(k)).sort();
const trim = (s, n = 400) => (s && s.length > n ? s.slice(0, n) + "…" : s);

for (const k of lost) {
	const r = gate.get(k);
	console.log(`${label}: LOST through the gate: ${k}${r ? "" : " (did not run: the CLI timed out or crashed?)"}`);
	for (const c of r ? r.checks.filter((c) => c.status === "FAILURE") : []) {
		console.log(`    ${c.id}: ${trim(c.errorMessage ?? c.description ?? "")}`);
	}
}
for (const k of gained) {
	console.log(`${label}: passes only through the gate: ${k}`);
}

// Informational: checks that are clean direct but WARN through the gate.
for (const [k, g] of gate) {
	const d = direct.get(k);
	if (!d) continue;
	const dWarn = new Set(d.checks.filter((c) => c.status === "WARNING").map((c) => c.id));
	for (const c of g.checks) {
		if (c.status === "WARNING" && !dWarn.has(c.id)) {
			console.log(`${label}: note: ${k}: new warning through the gate: ${c.id}: ${trim(c.errorMessage ?? c.description ?? "", 200)}`);
		}
	}
}

if (dPass.size === 0) {
	console.log(`${label}: FAIL: the direct run passed no scenario; the harness, not the gate, is broken`);
	process.exit(1);
}
if (lost.length || gained.length) {
	console.log(`${label}: FAIL: the gate changed the set of passing scenarios (${lost.length} lost, ${gained.length} gained)`);
	process.exit(1);
}
console.log(`${label}: OK: the gate passes exactly the ${dPass.size} scenarios the direct run passes`);

// The previous release, as it runs in production beside this one: its worker modules
// (src/worker/) and the Wasm core built from its own Rust, read from git into
// target/previous-<commit>/ (`previousRelease`). Built once per commit and kept: a
// second run only checks the files are there. The build uses its own target directory
// (target/previous-build/), so that it never overwrites the Wasm of this release's build.
import fs from "node:fs";
import path from "node:path";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** What of the previous commit its Wasm build reads: the crate and the benches its manifest names. */
const CRATE = ["Cargo.toml", "Cargo.lock", "src", "benches"];

const git = (...args) => execFileSync("git", ["-C", ROOT, ...args], { stdio: ["ignore", "pipe", "ignore"] });

/**
 * The previous release at `commit`: `{dir}`, the folder holding its `src/worker/` and
 * the `pkg/` its worker imports (`../../pkg/`), or `{skip}` saying why it cannot be had
 * (a clone without that commit). Builds the Wasm (wasm-pack) when it is not there yet;
 * a build that fails leaves no `pkg/`, so the next run builds again.
 */
export function previousRelease(commit) {
  try {
    git("cat-file", "-e", `${commit}^{commit}`);
  } catch {
    return { skip: `the previous release (${commit}) is not in this clone's history (a shallow clone?)` };
  }
  const dir = path.join(ROOT, "target", `previous-${commit.slice(0, 12)}`);
  const wasm = path.join(dir, "pkg", "reconnect_dedupe_bg.wasm");
  if (!fs.existsSync(wasm)) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    execFileSync("sh", ["-c", `git -C "$1" archive "$2" ${CRATE.join(" ")} | tar -x -C "$3"`, "archive", ROOT, commit, dir], { stdio: ["ignore", "ignore", "inherit"] });
    // The tools this project installs: wasm-bindgen (scripts/bin), wasm-opt (npm binaryen).
    const bin = ["scripts/bin", "node_modules/.bin"].map((p) => path.join(ROOT, p)).join(":");
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, CARGO_TARGET_DIR: path.join(ROOT, "target", "previous-build") };
    execFileSync("wasm-pack", ["--quiet", "build", "--target", "web", "--out-dir", "pkg-building", "--release"], { cwd: dir, env, stdio: ["ignore", "ignore", "inherit"] });
    fs.renameSync(path.join(dir, "pkg-building"), path.join(dir, "pkg"));
  }
  const worker = path.join(dir, "src", "worker");
  fs.mkdirSync(worker, { recursive: true });
  for (const file of git("ls-tree", "--name-only", commit, "src/worker/").toString().split("\n").filter(Boolean)) {
    fs.writeFileSync(path.join(worker, path.basename(file)), git("show", `${commit}:${file}`));
  }
  return { dir };
}

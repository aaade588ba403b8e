//! Writes the seed corpora: `seeds DIR` makes `DIR/<target>/<seed>` for every fuzz
//! target (files already there are kept; cargo-fuzz adds its own beside them).

use reconnect_dedupe_fuzz::seeds::{seeds, TARGETS};
use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".into()));
    for target in TARGETS {
        let at = dir.join(target);
        std::fs::create_dir_all(&at)?;
        let all = seeds(target);
        for (name, bytes) in &all {
            std::fs::write(at.join(format!("seed-{name}")), bytes)?;
        }
        println!("{target}: {} seeds in {}", all.len(), at.display());
    }
    Ok(())
}

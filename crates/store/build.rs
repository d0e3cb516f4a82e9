//! `embed_migrations!` (src/pool.rs) reads the migrations directory when the crate compiles.
//! Every file under it is named to cargo, so that a change to any of them, or a new one (the
//! directory itself is named too), rebuilds the crate with what the files now say; and a digest
//! of them all is given to the crate (`MIGRATIONS_DIGEST`), so that what is built from the
//! embedded migrations (the tests' template database, `qualifier_testkit`) is named after what
//! was embedded, not after the files as they are when it runs.
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

fn main() {
    let dir = Path::new("../../migrations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut all = Vec::new();
    files(dir, &mut all);
    all.sort();
    // FNV-1a over each file's path below the directory and its bytes: stable across machines.
    let mut h: u64 = 0xcbf29ce484222325;
    for f in &all {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f
            .strip_prefix(dir)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        let bytes = std::fs::read(f).unwrap_or_default();
        for b in name.bytes().chain(bytes) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    println!("cargo:rustc-env=STORE_MIGRATIONS_DIGEST={h:016x}");
}

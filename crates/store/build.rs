//! `embed_migrations!` (src/pool.rs) reads the migrations directory when the crate compiles;
//! cargo tracks the files it includes but not the directory, so a new migration would not be
//! embedded until something else changed. This makes a change anywhere under it rebuild.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}

//! Nothing to link: the benchmarks are in `benches/`.

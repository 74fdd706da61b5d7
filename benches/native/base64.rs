//! Experiment 002: the `base64` crate's encoder against a hand-unrolled
//! loop (seed 003's shape), on the cell sizes `queryBytes` meets. Native,
//! as a proxy for wasm (same Rust, same loop shapes; see the write-up).
//!
//!   cargo bench --bench base64
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use std::hint::black_box;
use std::time::Instant;

const TABLE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Four 3-byte groups per trip, then single groups, then the padded tail.
fn unrolled(input: &[u8], out: &mut [u8]) -> usize {
    #[inline(always)]
    fn triplet(src: &[u8], dst: &mut [u8]) {
        let v = (src[0] as u32) << 16 | (src[1] as u32) << 8 | src[2] as u32;
        dst[0] = TABLE[(v >> 18) as usize & 63];
        dst[1] = TABLE[(v >> 12) as usize & 63];
        dst[2] = TABLE[(v >> 6) as usize & 63];
        dst[3] = TABLE[v as usize & 63];
    }
    let (mut i, mut o) = (0, 0);
    while i + 12 <= input.len() {
        triplet(&input[i..], &mut out[o..]);
        triplet(&input[i + 3..], &mut out[o + 4..]);
        triplet(&input[i + 6..], &mut out[o + 8..]);
        triplet(&input[i + 9..], &mut out[o + 12..]);
        i += 12;
        o += 16;
    }
    while i + 3 <= input.len() {
        triplet(&input[i..], &mut out[o..]);
        i += 3;
        o += 4;
    }
    match input.len() - i {
        1 => {
            let v = (input[i] as u32) << 16;
            out[o..o + 4].copy_from_slice(&[
                TABLE[(v >> 18) as usize & 63],
                TABLE[(v >> 12) as usize & 63],
                b'=',
                b'=',
            ]);
            o += 4;
        }
        2 => {
            let v = (input[i] as u32) << 16 | (input[i + 1] as u32) << 8;
            out[o..o + 4].copy_from_slice(&[
                TABLE[(v >> 18) as usize & 63],
                TABLE[(v >> 12) as usize & 63],
                TABLE[(v >> 6) as usize & 63],
                b'=',
            ]);
            o += 4;
        }
        _ => {}
    }
    o
}

fn crate_encode(input: &[u8], out: &mut [u8]) -> usize {
    STANDARD.encode_slice(input, out).unwrap_or(0)
}

/// Median ns per byte-cell encode over `reps` samples.
fn measure(f: fn(&[u8], &mut [u8]) -> usize, input: &[u8], out: &mut [u8], calls: usize) -> f64 {
    let mut samples = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        for _ in 0..calls {
            black_box(f(black_box(input), out));
        }
        samples.push(t.elapsed().as_nanos() as f64 / calls as f64);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn main() {
    let sizes = [3usize, 16, 64, 4096, 1 << 20];
    for (pass, order) in [["crate", "unrolled"], ["unrolled", "crate"]].iter().enumerate() {
        println!(
            "\npass {} ({} first)\n\n| cell bytes | crate ns | unrolled ns | unrolled / crate |\n|---:|---:|---:|---:|",
            pass + 1,
            order[0]
        );
        for &n in &sizes {
            let input: Vec<u8> = (0..n).map(|i| (i * 131 + 7) as u8).collect();
            let mut a = vec![0u8; n.div_ceil(3) * 4];
            let mut b = a.clone();
            assert_eq!(crate_encode(&input, &mut a), unrolled(&input, &mut b));
            assert_eq!(a, b, "same bytes");
            let calls = (8 << 20) / n.max(64);
            let mut t = std::collections::HashMap::new();
            for name in order {
                let f: fn(&[u8], &mut [u8]) -> usize = if *name == "crate" { crate_encode } else { unrolled };
                t.insert(*name, measure(f, &input, &mut a, calls));
            }
            println!("| {n} | {:.1} | {:.1} | {:.2} |", t["crate"], t["unrolled"], t["unrolled"] / t["crate"]);
        }
    }
}

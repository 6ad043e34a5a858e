//! The client module's allocator (src/heap.rs), which this test binary
//! links as its global allocator (the crate's `heap` feature), under a
//! seeded mix of allocations, reallocations and frees of every size from 1
//! byte to 1 MiB and alignments up to 64 KiB: each block is aligned, holds
//! what was written to it until it is freed (so no two live blocks overlap)
//! and keeps its bytes through a reallocation. scripts/test-wasm.sh runs it
//! in Node and Chromium.
#![cfg(all(target_arch = "wasm32", target_os = "unknown"))]

// Links the crate, and with it its `#[global_allocator]`, which a test
// binary that names nothing of the crate would leave out.
use localdp_wasm_client as _;
use std::alloc::{alloc, dealloc, realloc, Layout};
use wasm_bindgen_test::wasm_bindgen_test;

/// A live block: where, its layout, and the tag its bytes are written from.
struct Block {
    ptr: *mut u8,
    layout: Layout,
    tag: u32,
}

/// Byte `i` of a block tagged `tag`: two blocks' bytes differ, so one
/// written over the other shows.
fn byte(tag: u32, i: usize) -> u8 {
    ((tag.wrapping_mul(0x9e37_79b9) ^ (i as u32).wrapping_mul(0x85eb_ca6b)) >> 24) as u8
}

fn holds(ptr: *const u8, len: usize, tag: u32) -> bool {
    // SAFETY: the caller's block holds `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    bytes.iter().enumerate().all(|(i, &b)| b == byte(tag, i))
}

fn check(block: &Block) {
    assert_eq!(block.ptr as usize % block.layout.align(), 0, "aligned to {}", block.layout.align());
    assert!(holds(block.ptr, block.layout.size(), block.tag), "a block of {} bytes was overwritten", block.layout.size());
}

fn fill(block: &Block) {
    for i in 0..block.layout.size() {
        // SAFETY: a live block of this layout.
        unsafe { block.ptr.add(i).write(byte(block.tag, i)) };
    }
}

/// xorshift64: test data, not randomness anyone relies on.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[wasm_bindgen_test]
fn blocks_are_aligned_disjoint_and_keep_their_bytes() {
    let mut state = 0x9e37_79b9_7f4a_7c15;
    let mut live: Vec<Block> = Vec::new();
    for step in 0..6_000u32 {
        let r = next(&mut state);
        match r % 8 {
            0..=2 => {
                // Mostly small sizes, some up to 32 KiB, a few up to 1 MiB.
                let size = match r % 64 {
                    0 => 1 + (r >> 8) as usize % (1 << 20),
                    1..=6 => 1 + (r >> 8) as usize % (1 << 15),
                    _ => 1 + (r >> 8) as usize % 600,
                };
                let align = 1 << ((r >> 40) % if r % 16 == 1 { 17 } else { 5 });
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size.
                let ptr = unsafe { alloc(layout) };
                assert!(!ptr.is_null());
                let block = Block { ptr, layout, tag: step };
                fill(&block);
                live.push(block);
            }
            3..=5 if !live.is_empty() => {
                let block = live.swap_remove((r >> 8) as usize % live.len());
                check(&block);
                // SAFETY: allocated with this layout, freed once.
                unsafe { dealloc(block.ptr, block.layout) };
            }
            6 if !live.is_empty() => {
                let i = (r >> 8) as usize % live.len();
                check(&live[i]);
                let new_size = 1 + (r >> 32) as usize % 5000;
                let old = &live[i];
                // SAFETY: allocated with this layout; a non-zero size.
                let ptr = unsafe { realloc(old.ptr, old.layout, new_size) };
                assert!(!ptr.is_null());
                assert!(holds(ptr, old.layout.size().min(new_size), old.tag), "realloc kept the bytes");
                let block = Block { ptr, layout: Layout::from_size_align(new_size, old.layout.align()).unwrap(), tag: step };
                fill(&block);
                live[i] = block;
            }
            _ if step % 64 == 0 => live.iter().for_each(check),
            _ => {}
        }
    }
    live.iter().for_each(check);
    for block in live {
        // SAFETY: allocated with this layout, freed once.
        unsafe { dealloc(block.ptr, block.layout) };
    }
}

#[wasm_bindgen_test]
fn a_block_is_a_power_of_two_aligned_to_its_size_up_to_64_kib() {
    // SAFETY: non-zero sizes; each block freed once with its layout.
    unsafe {
        let layout = Layout::from_size_align(1000, 1).unwrap();
        let block = alloc(layout);
        assert_eq!(block as usize % 1024, 0, "1000 bytes take a 1024-byte block, 1024-aligned");
        dealloc(block, layout);
        let large = Layout::from_size_align(200_000, 8).unwrap();
        let block = alloc(large);
        assert_eq!(block as usize % 65536, 0);
        dealloc(block, large);
        // black_box: an allocation only compared with null may be elided as a success.
        let refused = std::hint::black_box(alloc(Layout::from_size_align(16, 1 << 17).unwrap()));
        assert!(refused.is_null(), "no alignment above 64 KiB");
    }
}

#[wasm_bindgen_test]
fn a_freed_block_serves_the_next_request_of_its_size() {
    let layout = Layout::from_size_align(100, 8).unwrap();
    // SAFETY: a non-zero size; each block freed once with its layout.
    unsafe {
        let first = alloc(layout);
        dealloc(first, layout);
        let again = alloc(Layout::from_size_align(128, 8).unwrap());
        assert_eq!(again, first, "100 and 128 bytes share the 128-byte list");
        let grown = realloc(again, Layout::from_size_align(128, 8).unwrap(), 120);
        assert_eq!(grown, first, "a realloc within the size keeps the block");
        dealloc(grown, Layout::from_size_align(120, 8).unwrap());
    }
}

#[wasm_bindgen_test]
fn vectors_grow_through_realloc() {
    let v: Vec<u64> = (0..300_000u64).collect();
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    let s: String = (0..50_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    assert_eq!(s.len(), 50_000);
    assert!(s.bytes().enumerate().all(|(i, b)| b == b'a' + (i % 26) as u8));
}

#[wasm_bindgen_test]
fn the_memory_grows_by_doubling() {
    use core::arch::wasm32::memory_size;
    // 32 MiB in blocks of 1 KiB: grown a block at a time that was some 250
    // grows (and as many chances for the engine to collect its garbage).
    let layout = Layout::from_size_align(1024, 8).unwrap();
    let mut blocks = Vec::with_capacity(32 * 1024);
    let (mut grows, mut pages) = (0, memory_size::<0>());
    // SAFETY: a non-zero size; each block freed once with its layout.
    unsafe {
        for _ in 0..32 * 1024 {
            let block = alloc(layout);
            assert!(!block.is_null());
            blocks.push(block);
            if memory_size::<0>() != pages {
                (grows, pages) = (grows + 1, memory_size::<0>());
            }
        }
        for block in blocks {
            dealloc(block, layout);
        }
    }
    assert!((1..=10).contains(&grows), "{grows} grows for 32 MiB");
}

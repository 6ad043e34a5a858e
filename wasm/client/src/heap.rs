//! The client module's global allocator, in place of std's dlmalloc
//! (feature `heap`): a block is a power of two from 16 bytes up, aligned to its size
//! (to 64 KiB at most), and each size has a list of freed blocks that the
//! next request of that size takes back. New blocks are carved from the
//! top of the heap, which grows the wasm memory as needed, by at least the
//! memory's own size (doubling it; near its limit, by what it can); the gap that
//! aligning the top leaves is cut into smaller blocks for their lists, so
//! nothing is lost (but the rest of the top, should something else have
//! grown the memory in between). Memory is never given back (a wasm memory
//! cannot shrink), and a freed block serves its own size only, which suits
//! the client: it allocates the same few sizes for every report.
//!
//! The module is single-threaded (no `atomics` target feature), so the
//! lists need no lock.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32::{memory_grow, memory_size};
use core::cell::UnsafeCell;
use core::ptr::{null_mut, with_exposed_provenance_mut};

const PAGE: usize = 65536;
/// The smallest block: room for a list link, and std's widest alignment.
const MIN: usize = 16;
/// The sizes: 2^4 to 2^31 bytes (a layout's size is below 2^31).
const SIZES: usize = usize::BITS as usize - 4;

struct State {
    /// Each size's freed blocks, linked through their first word (0 ends a list).
    free: [usize; SIZES],
    /// The heap's unused top: `top..end` is memory no block holds (in
    /// `u64`: a 4 GiB memory ends at 2^32).
    top: u64,
    end: u64,
}

/// The allocator.
struct Heap(UnsafeCell<State>);

// Sound as the module runs on one thread: see the module's doc.
unsafe impl Sync for Heap {}

#[global_allocator]
static HEAP: Heap = Heap(UnsafeCell::new(State { free: [0; SIZES], top: 0, end: 0 }));

/// The list a request for `layout` is served from: the power of two at or
/// above its size and its alignment.
fn size_class(layout: &Layout) -> usize {
    let size = layout.size().max(layout.align()).max(MIN);
    (usize::BITS - (size - 1).leading_zeros()) as usize - 4
}

impl State {
    /// A new block of `1 << (class + 4)` bytes from the top, or null when
    /// memory cannot grow.
    fn carve(&mut self, class: usize) -> *mut u8 {
        let size = (MIN << class) as u64;
        let align = size.min(PAGE as u64);
        loop {
            // Align the top, each piece of the gap joining its own size's
            // list: the top is a multiple of 16, and its lowest set bit is
            // the largest block it can start.
            while self.top % align != 0 && self.top + (self.top & self.top.wrapping_neg()) <= self.end {
                let piece = self.top & self.top.wrapping_neg();
                self.push(piece.trailing_zeros() as usize - 4, self.top as usize);
                self.top += piece;
            }
            if self.top % align == 0 && self.end - self.top >= size {
                let block = self.top;
                self.top += size;
                return with_exposed_provenance_mut(block as usize);
            }
            // The pages the aligned block lacks past the top, and at least
            // as many as the memory has (JS engines may collect garbage at
            // each grow, and growing by a block at a time made that most
            // of the construction of a client of a million labels); near
            // the memory's limit, half as many in turn, down to those it
            // lacks. The block and its gap do not fit below `end`, so it
            // lacks some.
            let need = ((self.top.next_multiple_of(align) + size - self.end) as usize).div_ceil(PAGE);
            let mut pages = need.max(memory_size::<0>());
            let mut first = memory_grow::<0>(pages);
            while first == usize::MAX && pages > need {
                pages = (pages / 2).max(need);
                first = memory_grow::<0>(pages);
            }
            if first == usize::MAX {
                return null_mut();
            }
            let start = (first * PAGE) as u64;
            if start != self.end {
                // The first call (or memory grown by another): start there.
                self.top = start;
            }
            self.end = start + (pages * PAGE) as u64;
        }
    }

    fn push(&mut self, class: usize, block: usize) {
        // SAFETY: the block is at least 16 bytes, 16-aligned and unused.
        unsafe { *with_exposed_provenance_mut::<usize>(block) = self.free[class] };
        self.free[class] = block;
    }
}

unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: one thread, and no call re-enters the allocator.
        let state = unsafe { &mut *self.0.get() };
        if layout.align() > PAGE {
            return null_mut();
        }
        let class = size_class(&layout);
        match state.free[class] {
            0 => state.carve(class),
            block => {
                // SAFETY: a freed block of this size, its link in its first word.
                state.free[class] = unsafe { *with_exposed_provenance_mut::<usize>(block) };
                with_exposed_provenance_mut(block)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as in `alloc`; `ptr` was allocated with this layout.
        let state = unsafe { &mut *self.0.get() };
        state.push(size_class(&layout), ptr.expose_provenance());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract: `layout.align()` with `new_size` is a layout.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        if size_class(&new_layout) == size_class(&layout) {
            return ptr;
        }
        // SAFETY: as std's default `realloc`: a new block, the bytes both hold, the old one freed.
        unsafe {
            let new = self.alloc(new_layout);
            if !new.is_null() {
                core::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            new
        }
    }
}

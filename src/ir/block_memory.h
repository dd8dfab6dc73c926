#pragma once
// The memory of a Graph's node blocks, kept when a graph is destroyed for
// the next graph made (by any thread).
//
// A block is large (16,384 nodes and their bodies are 5.6 MB), so malloc
// maps it fresh or, once the graph is freed, trims it off the heap: every
// new graph then faults its pages in one at a time, and in a VM a fault
// costs about as much as making ten nodes. Building and printing a 10k-node
// graph spent half its page faults there. Up to kKeptBytes of freed blocks
// are kept; more is returned to malloc. Kept memory is poisoned under
// AddressSanitizer, so a use of a destroyed graph's node is still reported.

#include <cstddef>

namespace fx::detail {

// At least `bytes` of memory aligned for any node array, from a destroyed
// graph's block of the same size when one is kept.
void* acquire_block_memory(size_t bytes);
// Gives back what acquire_block_memory(bytes) returned.
void release_block_memory(void* p, size_t bytes) noexcept;

// What is kept now, in bytes (tests).
size_t kept_block_memory();

}  // namespace fx::detail

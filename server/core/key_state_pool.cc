#include "server/core/key_state_pool.h"

#include <cstdlib>
#include <mutex>
#include <new>

namespace seqd::allocator_internal {

#if defined(__SANITIZE_ADDRESS__)
// Sanitizer builds: every key from the heap, so a use after free is caught.
void* KeyStatePool::Allocate(size_t size) { return ::operator new(size); }
void KeyStatePool::Free(void* ptr) { ::operator delete(ptr); }
size_t KeyStatePool::Carved() { return 0; }
size_t KeyStatePool::FreeBlocks() { return 0; }
#else
namespace {

constexpr size_t kSlabBytes = 64 * 1024;
constexpr size_t kSlabAlign = alignof(std::max_align_t);

struct FreeBlock {
  FreeBlock* next;
};

struct Pool {
  std::mutex mu;
  size_t block = 0;         // set by the first Allocate
  char* slab_at = nullptr;  // the current slab's unused part
  char* slab_end = nullptr;
  FreeBlock* free = nullptr;
  size_t carved = 0;
  size_t free_blocks = 0;
};

Pool& ThePool() {
  static Pool* pool = new Pool;  // never destroyed: keys may outlive static destructors
  return *pool;
}

}  // namespace

void* KeyStatePool::Allocate(size_t size) {
  Pool& p = ThePool();
  std::lock_guard<std::mutex> lock(p.mu);
  if (p.block == 0) p.block = (size + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
  if (size > p.block || size > kMaxBlock) throw std::bad_alloc();
  if (p.free) {
    FreeBlock* b = p.free;
    p.free = b->next;
    --p.free_blocks;
    return b;
  }
  if (static_cast<size_t>(p.slab_end - p.slab_at) < p.block) {
    p.slab_at = static_cast<char*>(std::aligned_alloc(kSlabAlign, kSlabBytes));
    if (!p.slab_at) throw std::bad_alloc();
    p.slab_end = p.slab_at + kSlabBytes;
  }
  void* out = p.slab_at;
  p.slab_at += p.block;
  ++p.carved;
  return out;
}

void KeyStatePool::Free(void* ptr) {
  if (!ptr) return;
  Pool& p = ThePool();
  std::lock_guard<std::mutex> lock(p.mu);
  p.free = new (ptr) FreeBlock{p.free};
  ++p.free_blocks;
}

size_t KeyStatePool::Carved() {
  Pool& p = ThePool();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.carved;
}

size_t KeyStatePool::FreeBlocks() {
  Pool& p = ThePool();
  std::lock_guard<std::mutex> lock(p.mu);
  return p.free_blocks;
}
#endif

}  // namespace seqd::allocator_internal

// A sequence that grows by chunks of a fixed number of elements. Appending never moves what it
// holds (references and pointers stay valid), and a large one is never resident twice, as a
// doubling vector is while it copies into its new buffer. For the readers' event lists: tens of
// thousands of elements appended one by one, then read in order. Not thread-safe.
#pragma once

#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

namespace mimic {

template <typename T, size_t kChunk = 4096>
class ChunkedVector {
  static_assert(kChunk > 0);
  using Chunks = std::vector<std::vector<T>>;  // each reserved to kChunk, never beyond

  template <bool kConst>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const T*, T*>;
    using reference = std::conditional_t<kConst, const T&, T&>;

    using ChunksPtr = std::conditional_t<kConst, const Chunks*, Chunks*>;

    Iter() = default;
    Iter(ChunksPtr chunks, size_t index) : chunks_(chunks), index_(index) {}
    reference operator*() const { return (*chunks_)[index_ / kChunk][index_ % kChunk]; }
    pointer operator->() const { return &**this; }
    Iter& operator++() {
      ++index_;
      return *this;
    }
    Iter operator++(int) {
      Iter before = *this;
      ++index_;
      return before;
    }
    bool operator==(const Iter& other) const { return index_ == other.index_; }
    bool operator!=(const Iter& other) const { return index_ != other.index_; }

   private:
    ChunksPtr chunks_ = nullptr;
    size_t index_ = 0;
  };

 public:
  using value_type = T;
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](size_t i) { return chunks_[i / kChunk][i % kChunk]; }
  const T& operator[](size_t i) const { return chunks_[i / kChunk][i % kChunk]; }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ % kChunk == 0) chunks_.emplace_back().reserve(kChunk);
    ++size_;
    return chunks_.back().emplace_back(std::forward<Args>(args)...);
  }
  void push_back(T value) { emplace_back(std::move(value)); }

  // Destroys the elements and frees the chunks.
  void clear() {
    Chunks().swap(chunks_);
    size_ = 0;
  }

  iterator begin() { return {&chunks_, 0}; }
  iterator end() { return {&chunks_, size_}; }
  const_iterator begin() const { return {&chunks_, 0}; }
  const_iterator end() const { return {&chunks_, size_}; }

 private:
  Chunks chunks_;
  size_t size_ = 0;
};

}  // namespace mimic

// The quick call check (CallLayout::quick_check) against the full one
// (check_call): over many valid and damaged calls of several fusions, the
// quick check may decline any call, but a call it accepts must be one that
// check_call accepts with exactly the same dims, pointers and sizes. Valid
// calls in any tensor order must take the quick path.
#include "CallCheck.h"
#include "CallLayout.h"

#include "support/TestSupport.h"

#include "fusegen/Runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace fusegen::runtime {
namespace {

struct Case {
  const char* spec;
  std::map<std::string, std::vector<int64_t>> shapes; // every tensor of one valid call
};

const Case kCases[] = {
    {testing::kElementwiseSpec, {{"x", {8, 64}}, {"s", {64}}, {"y", {8, 64}}}},
    {"fusion chained {\n  input x : f32[N, 4]\n  param b : f32[4]\n  h = relu(x * 2.0 + b)\n"
     "  output y = h * h\n  output z = h - x\n}\n",
     {{"x", {3, 4}}, {"b", {4}}, {"y", {3, 4}}, {"z", {3, 4}}}},
    {"fusion two {\n  input a : f32[N, M]\n  input b : f32[N, M]\n  output c = a + b\n}\n",
     {{"a", {5, 7}}, {"b", {5, 7}}, {"c", {5, 7}}}},
    // K is fixed by the spec (linear's weight), N is free.
    {"fusion fixed {\n  input x : f32[N, K]\n  param w : f32[64, 32]\n  output y = linear(x, w)\n}\n",
     {{"x", {2, 32}}, {"w", {64, 32}}, {"y", {2, 64}}}},
    // State tensors are written: aliasing them is an error.
    {"fusion bn {\n  input x : f32[N, 16]\n  param g : f32[16]\n  param b : f32[16]\n  state rm : f32[16]\n"
     "  state rv : f32[16]\n  output y = batch_norm(x, rm, rv, weight=g, bias=b, training=true)\n}\n",
     {{"x", {4, 16}}, {"g", {16}}, {"b", {16}}, {"rm", {16}}, {"rv", {16}}, {"y", {4, 16}}}},
};

struct Call {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<uintptr_t> data;
  size_t outputs_from = 0; // names[outputs_from...] are outputs
};

Call valid_call(const Fusion& fusion, const Case& c) {
  Call call;
  uintptr_t next = 0x100000;
  auto add = [&](const std::string& name) {
    call.names.push_back(name);
    call.shapes.push_back(c.shapes.at(name));
    call.data.push_back(next);
    next += 0x100000;
  };
  for (ValueId id : fusion.arguments)
    add(fusion.value(id).name);
  call.outputs_from = call.names.size();
  for (const FusionOutput& output : fusion.outputs)
    add(output.name);
  return call;
}

// One random change that may or may not make the call wrong.
void damage(Call& call, std::mt19937& rng) {
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const size_t i = pick(call.names.size());
  switch (pick(12)) {
  case 0: call.names[i] = "nope"; break;
  case 1: call.names[i] = call.names[pick(call.names.size())]; break; // maybe a duplicate
  case 2:
    if (!call.shapes[i].empty())
      call.shapes[i][pick(call.shapes[i].size())] += 1;
    break;
  case 3:
    if (!call.shapes[i].empty())
      call.shapes[i][pick(call.shapes[i].size())] = 0;
    break;
  case 4:
    if (!call.shapes[i].empty())
      call.shapes[i][pick(call.shapes[i].size())] = -3;
    break;
  case 5: call.shapes[i].push_back(1); break;
  case 6:
    if (!call.shapes[i].empty())
      call.shapes[i].pop_back();
    break;
  case 7: call.data[i] = 0; break;
  case 8: call.data[i] += 4; break;                                               // misaligned
  case 9: call.data[i] = call.data[pick(call.data.size())] + 16; break;           // overlaps another
  case 10: call.shapes[i].assign(call.shapes[i].size(), int64_t{1} << 40); break; // too large
  case 11:                                                                        // drop a tensor
    call.names.erase(call.names.begin() + static_cast<std::ptrdiff_t>(i));
    call.shapes.erase(call.shapes.begin() + static_cast<std::ptrdiff_t>(i));
    call.data.erase(call.data.begin() + static_cast<std::ptrdiff_t>(i));
    if (i < call.outputs_from)
      --call.outputs_from;
    break;
  }
}

// Shuffles the arguments among themselves and the outputs among themselves.
void shuffle(Call& call, std::mt19937& rng) {
  std::vector<size_t> order(call.names.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::shuffle(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(call.outputs_from), rng);
  std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(call.outputs_from), order.end(), rng);
  Call out = call;
  for (size_t i = 0; i < order.size(); ++i) {
    out.names[i] = call.names[order[i]];
    out.shapes[i] = call.shapes[order[i]];
    out.data[i] = call.data[order[i]];
  }
  call = out;
}

struct Outcome {
  bool quick = false;
  CallLayout::Quick fast;
  bool checked_ok = false;
  CheckedCall checked;
};

Outcome run(const Fusion& fusion, const CallLayout& layout, const Call& call) {
  std::vector<TensorRef> args, outs;
  std::vector<TensorArg> arg_vec;
  std::vector<TensorOut> out_vec;
  for (size_t i = 0; i < call.names.size(); ++i) {
    TensorRef ref{call.names[i], reinterpret_cast<const void*>(call.data[i]), call.shapes[i].data(),
                  call.shapes[i].size()};
    if (i < call.outputs_from) {
      args.push_back(ref);
      arg_vec.push_back({call.names[i], reinterpret_cast<const void*>(call.data[i]), call.shapes[i]});
    } else {
      outs.push_back(ref);
      out_vec.push_back({call.names[i], reinterpret_cast<void*>(call.data[i]), call.shapes[i]});
    }
  }
  Outcome outcome;
  outcome.quick = layout.quick_check(args.data(), args.size(), outs.data(), outs.size(), outcome.fast);
  try {
    outcome.checked = check_call(fusion, arg_vec, out_vec);
    outcome.checked_ok = true;
  } catch (const RuntimeError& error) {
    EXPECT_EQ(error.kind(), ErrorKind::Argument) << error.what();
  }
  return outcome;
}

TEST(CallLayout, QuickCheckAcceptsOnlyWhatCheckCallAccepts) {
  std::mt19937 rng(12345);
  size_t quick_accepted = 0, declined_valid = 0, rejected = 0;
  for (const Case& c : kCases) {
    auto loaded = testing::load_module(c.spec);
    ASSERT_TRUE(loaded);
    const Fusion& fusion = loaded->fusion();
    CallLayout layout(fusion);
    for (int round = 0; round < 3000; ++round) {
      Call call = valid_call(fusion, c);
      const int damages = round % 4 == 0 ? 0 : 1 + round % 3;
      for (int d = 0; d < damages; ++d)
        damage(call, rng);
      if (round % 2 == 1)
        shuffle(call, rng);
      Outcome outcome = run(fusion, layout, call);
      if (damages == 0) { // valid calls, in any order, take the quick path
        EXPECT_TRUE(outcome.quick) << fusion.name << " round " << round;
      }
      if (outcome.quick) {
        ++quick_accepted;
        ASSERT_TRUE(outcome.checked_ok) << fusion.name << " round " << round << ": quick accepted a bad call";
        ASSERT_FALSE(outcome.checked.empty);
        EXPECT_EQ(layout.bindings(outcome.fast.dims), outcome.checked.dims);
        EXPECT_EQ(outcome.fast.arguments, outcome.checked.arguments);
        EXPECT_EQ(outcome.fast.outputs, outcome.checked.outputs);
        EXPECT_EQ(outcome.fast.argument_bytes, outcome.checked.argument_bytes);
        EXPECT_EQ(outcome.fast.output_bytes, outcome.checked.output_bytes);
      } else if (outcome.checked_ok) {
        ++declined_valid; // e.g. a zero-size call
      } else {
        ++rejected;
      }
    }
  }
  // The comparison is not vacuous: both kinds occur often.
  EXPECT_GT(quick_accepted, 3000u);
  EXPECT_GT(rejected, 3000u);
  std::printf("quick path: %zu accepted, %zu valid calls declined, %zu errors left to check_call\n", quick_accepted,
              declined_valid, rejected);
}

TEST(CallLayout, BindingsAreTheSymbolsInOrder) {
  auto loaded = testing::load_module(kCases[2].spec);
  ASSERT_TRUE(loaded);
  CallLayout layout(loaded->fusion());
  EXPECT_EQ(layout.symbols(), (std::vector<std::string>{"M", "N"}));
  EXPECT_EQ(layout.bindings({7, 5}), (DimBindings{{"M", 7}, {"N", 5}}));
}

} // namespace
} // namespace fusegen::runtime

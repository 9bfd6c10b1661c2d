// The standalone reference for launchbench floor's native layer: the same empty kernels (0, 4 and 16
// pointer arguments, one thread), launched with <<<>>>, cuLaunchKernel and cuGraphLaunch (a graph of
// NODES launches) in C++ loops, the queue bounded as launchbench bounds it (an event after every block of
// 256 launches, the thread waiting for the block before). Each batch is at least COUNT iterations, as many
// more as make it last SAMPLE_US µs (launchbench's sample_time; 0: COUNT exactly), timed wall clock from
// before the first launch to the stream's completion; printed: the median of BATCHES batches, µs per
// launch, one JSON line per method and argument count, and with STRETCH the medians of consecutive
// stretches of STRETCH batches (stretches_us).
//
//     nvcc -O2 -o launch launch.cu -lcuda && ./launch [COUNT] [BATCHES] [NODES] [SAMPLE_US] [STRETCH]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(call)                                                                  \
    do {                                                                             \
        auto status_ = (call);                                                       \
        if (status_ != 0) {                                                          \
            std::fprintf(stderr, "%s failed: error %d\n", #call, (int)status_);      \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

typedef const float *P;
__global__ void lb_floor_0() {}
__global__ void lb_floor_4(P, P, P, P) {}
__global__ void lb_floor_16(P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P) {}

static const long BLOCK = 256;  // launchbench's default: max_in_flight 512, half of it per block

struct Window {
    cudaEvent_t events[3];
    long marks = 0;
    Window() {
        for (auto &e : events) CHECK(cudaEventCreateWithFlags(&e, cudaEventBlockingSync | cudaEventDisableTiming));
    }
    void mark(cudaStream_t s) {
        CHECK(cudaEventRecord(events[marks % 3], s));
        if (marks > 0) CHECK(cudaEventSynchronize(events[(marks - 1) % 3]));
        marks++;
    }
};

// ``launch`` called ``count`` times (per_mark calls between marks), until the stream is done: µs per call
static double batch(cudaStream_t s, Window &w, long count, long per_mark, const std::function<void()> &launch) {
    w.marks = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (long done = 0; done < count;) {
        long n = std::min(per_mark, count - done);
        for (long i = 0; i < n; i++) launch();
        done += n;
        if (done < count) w.mark(s);
    }
    CHECK(cudaStreamSynchronize(s));
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / count;
}

// The calls per batch that make a batch last at least ``sample_us`` µs (launchbench's sample_time), found as
// launchbench's sampler finds its iterations per sample: double, or extrapolate with 10% to spare. These
// batches are the warm-up; with sample_us 0, one batch of ``calls``.
static long calibrated(cudaStream_t s, Window &w, long calls, long per_mark, double sample_us,
                       const std::function<void()> &launch) {
    for (int i = 0; i < 40; i++) {
        double took = batch(s, w, calls, per_mark, launch) * calls;
        if (took >= sample_us) break;
        calls = took > 0 ? std::max(calls * 2, (long)std::ceil(calls * sample_us / took * 1.1)) : calls * 10;
    }
    return calls;
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static long g_stretch = 0;  // argv[5]: batches per stretch median (0: none)

// One JSON line: the median of the batches, and with a stretch the medians of consecutive stretches of
// that many batches (a short last one joins the one before it), as bare_layers.py --stretch prints them.
static void report(const char *method, int args, long nodes, const std::vector<double> &per_launch) {
    std::printf("{\"layer\": \"c\", \"method\": \"%s\", \"args\": %d, \"nodes\": %ld, \"us_per_launch\": %.4f",
                method, args, nodes, median(per_launch));
    long size = g_stretch, count = size > 0 ? (long)per_launch.size() / size : 0;
    if (count > 0) {
        std::printf(", \"stretches_us\": [");
        for (long i = 0; i < count; i++) {
            auto first = per_launch.begin() + i * size;
            auto last = i < count - 1 ? first + size : per_launch.end();
            std::printf("%s%.4f", i ? ", " : "", median(std::vector<double>(first, last)));
        }
        std::printf("]");
    }
    std::printf("}\n");
    std::fflush(stdout);
}

template <typename Chevron>
static void measure(int args, const void *symbol, Chevron chevron, P ptr, cudaStream_t s, long count, int batches,
                    long nodes, double sample_us) {
    Window w;
    CUfunction f;
    CHECK(cudaGetFuncBySymbol((cudaFunction_t *)&f, symbol));
    std::vector<P> values(args, ptr);
    std::vector<void *> params(args);
    for (int i = 0; i < args; i++) params[i] = &values[i];
    void **kp = args ? params.data() : nullptr;
    auto driver = [&] { CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, (CUstream)s, kp, nullptr)); };
    CUgraph graph;
    CUgraphExec exec;
    CHECK(cuStreamBeginCapture((CUstream)s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (long i = 0; i < nodes; i++) driver();
    CHECK(cuStreamEndCapture((CUstream)s, &graph));
    CHECK(cuGraphInstantiate(&exec, graph, 0));
    auto replay = [&] { CHECK(cuGraphLaunch(exec, (CUstream)s)); };
    auto chev = [&] { chevron(s); };
    struct Method { const char *name; std::function<void()> call; long per_call; };
    Method methods[] = {{"triple_chevron", chev, 1}, {"cuLaunchKernel", driver, 1}, {"cuGraphLaunch", replay, nodes}};
    for (auto &m : methods) {
        std::vector<double> samples;
        long per_mark = std::max(1L, BLOCK / m.per_call);
        long calls = calibrated(s, w, m.per_call == 1 ? count * nodes : count, per_mark, sample_us, m.call);
        for (int b = 0; b < batches; b++) samples.push_back(batch(s, w, calls, per_mark, m.call) / m.per_call);
        report(m.name, args, nodes, samples);
    }
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(graph));
}

int main(int argc, char **argv) {
    long count = argc > 1 ? std::atol(argv[1]) : 10000;
    int batches = argc > 2 ? std::atoi(argv[2]) : 9;
    long nodes = argc > 3 ? std::atol(argv[3]) : 1;
    double sample_us = argc > 4 ? std::atof(argv[4]) : 0.0;
    g_stretch = argc > 5 ? std::atol(argv[5]) : 0;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *buffer;
    CHECK(cudaMalloc(&buffer, sizeof(float)));
    P p = buffer;
    measure(0, (const void *)lb_floor_0, [](cudaStream_t st) { lb_floor_0<<<1, 1, 0, st>>>(); }, p, s, count,
            batches, nodes, sample_us);
    measure(4, (const void *)lb_floor_4, [p](cudaStream_t st) { lb_floor_4<<<1, 1, 0, st>>>(p, p, p, p); }, p, s,
            count, batches, nodes, sample_us);
    measure(16, (const void *)lb_floor_16,
            [p](cudaStream_t st) { lb_floor_16<<<1, 1, 0, st>>>(p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p); }, p,
            s, count, batches, nodes, sample_us);
    CHECK(cudaFree(buffer));
    return 0;
}

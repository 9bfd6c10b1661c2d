/* launchbench's native launch floor: cuLaunchKernel and cuGraphLaunch in a C loop.
 *
 * Built at run time with the system's C compiler (cc -O2 -shared -fPIC native.c -ldl) and loaded through
 * ctypes. No CUDA headers: the few driver API declarations it needs are below, and libcuda is opened with
 * dlopen, so the file compiles on a machine without CUDA and, there, refuses at lbf_open with one line.
 * Every function returns 0 on success or a CUresult (or -1) with a one-line message in err.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUgraph;
typedef void *CUgraphExec;

#define LBF_EVENT_FLAGS 3 /* CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING */
#define LBF_CAPTURE_THREAD_LOCAL 1 /* CU_STREAM_CAPTURE_MODE_THREAD_LOCAL */
#define LBF_WINDOW 3

static struct {
    void *lib;
    CUresult (*init)(unsigned int);
    CUresult (*error_string)(CUresult, const char **);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*module_load_data)(CUmodule *, const void *);
    CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
    CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*event_create)(CUevent *, unsigned int);
    CUresult (*event_record)(CUevent, CUstream);
    CUresult (*event_synchronize)(CUevent);
    CUresult (*begin_capture)(CUstream, int);
    CUresult (*end_capture)(CUstream, CUgraph *);
    CUresult (*graph_instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*graph_exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
    CUevent window[LBF_WINDOW];
} lbf;

static int fail(char *err, int errlen, const char *what, CUresult res) {
    const char *text = NULL;
    if (lbf.error_string != NULL)
        lbf.error_string(res, &text);
    snprintf(err, (size_t)errlen, "%s failed: CUDA error %d (%s)", what, res, text ? text : "unknown");
    return res ? res : -1;
}

#define LBF_SYM(field, name)                                                                        \
    do {                                                                                            \
        *(void **)(&lbf.field) = dlsym(lbf.lib, name);                                              \
        if (lbf.field == NULL) {                                                                    \
            snprintf(err, (size_t)errlen, "%s has no %s: the driver is older than this floor needs", \
                     libname, name);                                                                \
            return -1;                                                                              \
        }                                                                                           \
    } while (0)

static int resolve(const char *libname, char *err, int errlen) {
    LBF_SYM(init, "cuInit");
    LBF_SYM(error_string, "cuGetErrorString");
    LBF_SYM(ctx_get_current, "cuCtxGetCurrent");
    LBF_SYM(ctx_set_current, "cuCtxSetCurrent");
    LBF_SYM(primary_retain, "cuDevicePrimaryCtxRetain");
    LBF_SYM(module_load_data, "cuModuleLoadData");
    LBF_SYM(module_get_function, "cuModuleGetFunction");
    LBF_SYM(launch_kernel, "cuLaunchKernel");
    LBF_SYM(event_create, "cuEventCreate");
    LBF_SYM(event_record, "cuEventRecord");
    LBF_SYM(event_synchronize, "cuEventSynchronize");
    LBF_SYM(begin_capture, "cuStreamBeginCapture_v2");
    LBF_SYM(end_capture, "cuStreamEndCapture");
    LBF_SYM(graph_instantiate, "cuGraphInstantiateWithFlags");
    LBF_SYM(graph_launch, "cuGraphLaunch");
    LBF_SYM(graph_exec_destroy, "cuGraphExecDestroy");
    LBF_SYM(graph_destroy, "cuGraphDestroy");
    return 0;
}

/* Open the driver library and initialise it. */
int lbf_open(const char *libname, char *err, int errlen) {
    CUresult res;
    if (lbf.lib != NULL)
        return 0;
    lbf.lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    if (lbf.lib == NULL) {
        const char *why = dlerror();
        snprintf(err, (size_t)errlen, "cannot load the CUDA driver library: %s", why ? why : libname);
        return -1;
    }
    if (resolve(libname, err, errlen) != 0) {
        dlclose(lbf.lib);
        lbf.lib = NULL;
        return -1;
    }
    res = lbf.init(0);
    return res ? fail(err, errlen, "cuInit", res) : 0;
}

/* Make a context current (the one the calling thread has, else device 0's primary context), create the
 * launch window's events and load the kernel ``name`` from ``ptx``. */
int lbf_load(const char *ptx, const char *name, CUfunction *fn, char *err, int errlen) {
    CUcontext ctx = NULL;
    CUmodule module = NULL;
    CUresult res;
    int i;
    if (lbf.lib == NULL)
        return snprintf(err, (size_t)errlen, "lbf_open was not called"), -1;
    if ((res = lbf.ctx_get_current(&ctx)) != 0)
        return fail(err, errlen, "cuCtxGetCurrent", res);
    if (ctx == NULL) {
        if ((res = lbf.primary_retain(&ctx, 0)) != 0)
            return fail(err, errlen, "cuDevicePrimaryCtxRetain", res);
        if ((res = lbf.ctx_set_current(ctx)) != 0)
            return fail(err, errlen, "cuCtxSetCurrent", res);
    }
    for (i = 0; i < LBF_WINDOW && lbf.window[i] == NULL; i++)
        if ((res = lbf.event_create(&lbf.window[i], LBF_EVENT_FLAGS)) != 0)
            return fail(err, errlen, "cuEventCreate", res);
    if ((res = lbf.module_load_data(&module, ptx)) != 0)
        return fail(err, errlen, "cuModuleLoadData", res);
    if ((res = lbf.module_get_function(fn, module, name)) != 0)
        return fail(err, errlen, "cuModuleGetFunction", res);
    return 0;
}

/* After each block of launches but the last: record an event, wait for the one before it (so at most
 * three blocks are queued; the caller waits for the last). */
static CUresult mark(CUstream stream, long *marks) {
    CUresult res = lbf.event_record(lbf.window[*marks % LBF_WINDOW], stream);
    if (res == 0 && *marks > 0)
        res = lbf.event_synchronize(lbf.window[(*marks - 1) % LBF_WINDOW]);
    *marks += 1;
    return res;
}

/* ``launches`` cuLaunchKernel calls of ``fn`` (one thread) on ``stream``, the queue bounded by ``block``. */
int lbf_eager(CUfunction fn, CUstream stream, void **params, long launches, long block, char *err,
              int errlen) {
    long done = 0, marks = 0, i, n;
    CUresult res;
    while (done < launches) {
        n = launches - done < block ? launches - done : block;
        for (i = 0; i < n; i++)
            if ((res = lbf.launch_kernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL)) != 0)
                return fail(err, errlen, "cuLaunchKernel", res);
        done += n;
        if (done < launches && (res = mark(stream, &marks)) != 0)
            return fail(err, errlen, "cuEventRecord/cuEventSynchronize", res);
    }
    return 0;
}

/* A graph of ``nodes`` launches of ``fn``, captured on ``stream`` and instantiated. */
int lbf_graph_make(CUfunction fn, CUstream stream, void **params, int nodes, CUgraphExec *exec,
                   char *err, int errlen) {
    CUgraph graph = NULL;
    CUresult res;
    int i;
    if ((res = lbf.begin_capture(stream, LBF_CAPTURE_THREAD_LOCAL)) != 0)
        return fail(err, errlen, "cuStreamBeginCapture", res);
    for (i = 0; i < nodes; i++)
        if ((res = lbf.launch_kernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL)) != 0)
            break;
    if (lbf.end_capture(stream, &graph) != 0 || res != 0)
        return fail(err, errlen, "capturing cuLaunchKernel", res);
    res = lbf.graph_instantiate(exec, graph, 0);
    lbf.graph_destroy(graph);
    return res ? fail(err, errlen, "cuGraphInstantiateWithFlags", res) : 0;
}

/* ``launches`` cuGraphLaunch calls of ``exec`` on ``stream``, the queue bounded by ``block`` launches. */
int lbf_graph(CUgraphExec exec, CUstream stream, long launches, long block, char *err, int errlen) {
    long done = 0, marks = 0, i, n;
    CUresult res;
    while (done < launches) {
        n = launches - done < block ? launches - done : block;
        for (i = 0; i < n; i++)
            if ((res = lbf.graph_launch(exec, stream)) != 0)
                return fail(err, errlen, "cuGraphLaunch", res);
        done += n;
        if (done < launches && (res = mark(stream, &marks)) != 0)
            return fail(err, errlen, "cuEventRecord/cuEventSynchronize", res);
    }
    return 0;
}

int lbf_graph_free(CUgraphExec exec) { return lbf.graph_exec_destroy(exec); }

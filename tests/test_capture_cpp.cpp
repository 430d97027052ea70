// test_capture_cpp.cpp: capture.h compiled as C++ (C++11, -Wpedantic), as
// CUDA host code includes it, and linked against libparity_traces.so alone:
// the link line docs/traces.md promises.  cmocka's header is C-only, so
// this test checks by hand and exits nonzero on the first failure.
#include "capture.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

static int failures = 0;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,    \
                         __LINE__, #cond);                                 \
            failures++;                                                    \
        }                                                                  \
    } while (0)

static std::string slurp(const std::string &path)
{
    std::string s;
    if (FILE *f = std::fopen(path.c_str(), "rb")) {
        char buf[4096];
        size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
            s.append(buf, n);
        std::fclose(f);
    }
    return s;
}

int main()
{
    char dir[] = "/tmp/test_capture_cpp.XXXXXX";
    if (!mkdtemp(dir)) {
        std::perror("mkdtemp");
        return 1;
    }
    const std::string path = std::string(dir) + "/cpp.safetensors";

    // What a CUDA host program does after cudaMemcpy of the output.
    std::vector<uint16_t> y(2 * 4, 0x3f80);  // bf16 1.0
    const int64_t shape[2] = {2, 4};
    parity_capture *cap = parity_capture_begin(path.c_str(), "gemm", "splitk4",
                                               "sm90", "my_gemm<128>");
    CHECK(cap != nullptr);
    CHECK(parity_capture_device(cap, "sku", "NVIDIA H100") == NX_OK);
    CHECK(parity_capture_device_int(cap, "sm_count", 132) == NX_OK);
    CHECK(parity_capture_shape(cap, "M=2,N=4,K=64") == NX_OK);
    CHECK(parity_capture_seed(cap, 42ull, "normal") == NX_OK);
    CHECK(parity_capture_mode(cap, "graphed") == NX_OK);
    CHECK(parity_capture_run(cap, 2) == NX_OK);
    CHECK(parity_capture_batch_rows(cap, 0, 2) == NX_OK);
    CHECK(parity_capture_output(cap, "y", "BF16", 2, shape, y.data()) == NX_OK);
    nx_err err;
    nx_status rc = parity_capture_end(cap, &err);
    if (rc != NX_OK)
        std::fprintf(stderr, "parity_capture_end: %s\n", err.msg);
    CHECK(rc == NX_OK);

    // The file is a safetensors file whose header holds what was set.
    const std::string f = slurp(path);
    CHECK(f.size() > 8);
    uint64_t hl = 0;
    for (int k = 0; k < 8 && f.size() > 8; k++)
        hl |= static_cast<uint64_t>(static_cast<unsigned char>(f[k])) << (8 * k);
    CHECK(hl % 8 == 0 && 8 + hl + 16 == f.size());
    const std::string hdr = f.substr(8, static_cast<size_t>(hl));
    const char *const want[] = {
        "\"parity.trace\":\"1\"", "\"family\":\"gemm\"",
        "\"kernel\":\"my_gemm<128>\"", "\\\"sm_count\\\":132",
        "\"mode\":\"graphed\"", "\"run\":\"2\"", "\"batch\":\"rows=0..1\"",
        "\"seed\":\"42\"", "\"y\":{\"dtype\":\"BF16\",\"shape\":[2,4]",
    };
    for (const char *w : want)
        if (hdr.find(w) == std::string::npos) {
            std::fprintf(stderr, "header lacks %s: %s\n", w, hdr.c_str());
            failures++;
        }

    // A sticky error: nothing written, the call named.
    const std::string bad = std::string(dir) + "/bad.safetensors";
    cap = parity_capture_begin(bad.c_str(), "gemm", "splitk4", "sm90", "k");
    CHECK(parity_capture_batch(cap, "rows=3..1") == NX_EINVAL);
    parity_capture_shape(cap, "M=2");
    parity_capture_seed(cap, 1, "normal");
    parity_capture_output(cap, "y", "bf16", 2, shape, y.data());
    CHECK(parity_capture_end(cap, &err) == NX_EINVAL);
    CHECK(std::strstr(err.msg, "parity_capture_batch") != nullptr);
    CHECK(access(bad.c_str(), F_OK) != 0);

    std::remove(path.c_str());
    rmdir(dir);
    std::printf("test_capture_cpp: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}

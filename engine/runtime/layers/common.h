#pragma once
// Shared pieces of the transformer and MoE layers (docs/layers.md): parameter shapes and their views into a
// stage's contiguous weight and gradient buffers, the tensors a layer keeps between its actions, the interface
// every layer kind implements (F, I and W apart, and B fused), and the linear layer's three GEMMs.
//
// Conventions: fp32, row-major; activations are T × width with T = batch × seqLen tokens, token t at position
// t mod seqLen of its sequence. Weights are stored as PyTorch stores a Linear(in → out): out × in, so a linear
// layer is y = x·Wᵀ. The GEMMs go through Backend::gemm, the elementwise kernels (norms, rotary, softmax, SiLU,
// gathers, the routing's dispatch and combine) through the backend's kernels of the transformer layers
// (backend.h; docs/layers.md, "Backends"), so the layers run on any fp32 backend that has them (cpu, cuda). The
// MoE routing itself (top-k, gates) is host bookkeeping: the router's logits are downloaded, routed and the
// affinities uploaded, the same code on every backend.
#include "runtime/backend.h"

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace dps::runtime::layers {

/// One weight matrix of a layer: rows × cols elements (a vector is 1 × n).
struct ParamShape {
    std::string name; ///< as in the reference implementation ("q_proj", "experts.3.down_proj")
    std::size_t rows = 0;
    std::size_t cols = 0;
    std::size_t elements() const { return rows * cols; }
};

/// Elements of all `shapes` together.
std::size_t parameterElements(const std::vector<ParamShape>& shapes);

/// A weight and its gradient, views into a layer's buffers.
struct ParamView {
    void* weight = nullptr;
    void* grad = nullptr;
    std::size_t rows = 0;
    std::size_t cols = 0;
};

/// Views over the weights and gradients of one layer laid out contiguously in the order of its shapes (so a
/// stage can hold every layer's weights in one buffer and its gradients in another, as StageParams does).
class ParamSet {
public:
    ParamSet() = default;
    /// `weights` and `grads` each hold parameterElements(shapes) elements of `elementBytes` bytes.
    ParamSet(const std::vector<ParamShape>& shapes, void* weights, void* grads, int elementBytes);
    /// Throws RuntimeError naming the index when it is out of range.
    const ParamView& operator[](std::size_t i) const;
    /// Number of parameters (weight matrices and vectors).
    std::size_t size() const { return m_views.size(); }

private:
    std::vector<ParamView> m_views;
};

/// Weights and gradients of one layer owned on a backend (Parameter and Gradient memory); gradients start at
/// zero, weights at zero until set. For tests and single layers; a stage binds a ParamSet over its own buffers.
class ParamStorage {
public:
    /// Throws RuntimeError when the backend cannot allocate.
    ParamStorage(Backend& backend, std::vector<ParamShape> shapes);
    /// The views the layer's actions take.
    const ParamSet& params() const { return m_set; }
    /// The shapes given at construction.
    const std::vector<ParamShape>& shapes() const { return m_shapes; }
    /// Uploads the weights of parameter i (rows × cols floats). Throws RuntimeError on a size mismatch, naming it.
    void setWeight(std::size_t i, const std::vector<float>& values);
    /// The weights (or gradients) of parameter i, downloaded as rows × cols floats. Throws RuntimeError for an
    /// index out of range.
    std::vector<float> weight(std::size_t i) const;
    std::vector<float> grad(std::size_t i) const;
    /// Sets every gradient to zero (before a step's first backward).
    void zeroGrads();

private:
    Backend& m_backend;
    std::vector<ParamShape> m_shapes;
    Tensor m_weights;
    Tensor m_grads;
    ParamSet m_set;
};

/// Where a layer's saved tensors stand between its actions.
enum class Phase { Empty, AfterForward, AfterInputGrad };

/// What one layer keeps between actions for one microbatch: Activation tensors in numbered slots (each layer
/// kind names its slots), and host bookkeeping that the allocator does not count (the MoE routing).
class Saved {
public:
    /// The tensor in `slot` (created empty on first use).
    Tensor& operator[](std::size_t slot);
    /// The tensor in `slot`; throws RuntimeError naming the slot when it was never made.
    const Tensor& at(std::size_t slot) const;
    /// Bytes of the tensors held (the activation ledger of this layer).
    std::size_t bytes() const;
    /// Frees everything; the phase becomes Empty.
    void clear();

    Phase phase = Phase::Empty;
    std::vector<int> routes; ///< MoE: T × top_k routed experts per token, host memory
    std::vector<std::vector<int>> expertRows; ///< MoE: per expert, its token-expert pairs (t · top_k + slot)
    /// MoE with expert parallelism: per local expert, the rows each group member sent it (host bookkeeping)
    std::vector<std::vector<int>> received;
    int tag = -1; ///< MoE with expert parallelism: this block and microbatch's exchange number (MoeBlock)

private:
    std::vector<Tensor> m_slots;
};

/// One layer kind (an attention block, a dense MLP block, an MoE block): y = x + f(RMSNorm(x)) on T × h,
/// with its forward (F), backward for inputs (I) and backward for weights (W) apart, and B = I and W fused.
/// F keeps what I needs, I keeps what W needs (the zero-bubble split, Qi et al. 2023), W frees it; B keeps
/// nothing. Kept tensors are MemoryCategory::Activation, transient ones Workspace; what F and I return is
/// Workspace (the caller recategorizes it). The norms' weight gradients are accumulated in I (and B), as the
/// model library counts (docs/model-library.md, "Kept from I until W").
class Layer {
public:
    virtual ~Layer() = default;
    /// "gqa", "mla", "swiglu", "moe".
    virtual std::string kind() const = 0;
    /// The weights, in the order a ParamSet over them is laid out.
    virtual std::vector<ParamShape> parameterShapes() const = 0;
    /// F: consumes x (T × h), returns y (T × h) and keeps in `saved` (Empty) what I needs.
    /// Throws RuntimeError for a shape mismatch or a saved state that is not Empty.
    virtual Tensor forward(Lane lane, const ParamSet& p, Tensor x, Saved& saved) const = 0;
    /// I: from dy (T × h, consumed) returns dx (T × h) and keeps what W needs. Throws RuntimeError without F.
    virtual Tensor inputGrad(Lane lane, const ParamSet& p, Saved& saved, Tensor dy) const = 0;
    /// W: accumulates the weight gradients from what I kept and frees it. Throws RuntimeError without I.
    virtual void weightGrad(Lane lane, const ParamSet& p, Saved& saved) const = 0;
    /// B: I and W at once (the same GEMMs, so the gradients equal I then W's); frees what F kept.
    virtual Tensor backward(Lane lane, const ParamSet& p, Saved& saved, Tensor dy) const = 0;
};

/// A Layer whose I and B are one pass, backwardImpl: I (fused false) keeps what W needs; B (fused true) runs
/// W's GEMMs as it goes and keeps nothing, so its gradients equal I then W's.
class FusableLayer : public Layer {
public:
    Tensor inputGrad(Lane lane, const ParamSet& p, Saved& saved, Tensor dy) const final
    {
        return backwardImpl(lane, p, saved, std::move(dy), false);
    }
    Tensor backward(Lane lane, const ParamSet& p, Saved& saved, Tensor dy) const final
    {
        return backwardImpl(lane, p, saved, std::move(dy), true);
    }

protected:
    /// I (fused false) or B (fused true); throws RuntimeError as they do.
    virtual Tensor backwardImpl(Lane lane, const ParamSet& p, Saved& saved, Tensor dy, bool fused) const = 0;
};

/// Throws RuntimeError naming `what` and the backend's element size unless `backend` computes in fp32 (4-byte
/// elements): the layers' kernels and their host routing are fp32 only (a bf16 cuda backend is refused).
void requireFp32(const Backend& backend, const std::string& what);
/// Throws RuntimeError naming `what` unless `saved` is in `phase`.
void requirePhase(const Saved& saved, Phase phase, const std::string& what);
/// Throws RuntimeError naming `what` unless `t` is rows × cols.
void requireShape(const Tensor& t, std::size_t rows, std::size_t cols, const std::string& what);

/// y (rows × out) = x (rows × in) · Wᵀ + beta · y: the forward of a linear layer with W out × in.
void linearForward(
    Backend& backend, Lane lane, const void* x, const ParamView& w, void* y, std::size_t rows, float beta = 0.0f);
/// dx (rows × in) = dy (rows × out) · W + beta · dx: the linear layer's I.
void linearInputGrad(
    Backend& backend, Lane lane, const void* dy, const ParamView& w, void* dx, std::size_t rows, float beta = 0.0f);
/// dW += dyᵀ · x: the linear layer's W (accumulates into w.grad).
void linearWeightGrad(Backend& backend, Lane lane, const void* dy, const void* x, const ParamView& w, std::size_t rows);

/// A copy of a tensor's content (on `lane`) into a new tensor of the same shape in `category`. Throws
/// RuntimeError when it cannot be allocated.
Tensor copyOf(Backend& backend, Lane lane, const Tensor& t, MemoryCategory category);

/// The n floats at device pointer `src`, downloaded on `lane` (synchronous). Throws RuntimeError as the
/// backend's download does.
std::vector<float> download(Backend& backend, Lane lane, const void* src, std::size_t n);

/// A host view of n floats of device memory: the memory itself on a host-accessible backend, else a host copy
/// (downloaded at construction when `read`; uploaded back by commit()). For the host-side parts of a layer (the
/// expert all-to-all's packing, through host buffers on a device backend).
class HostMirror {
public:
    /// Throws RuntimeError as the backend's download does.
    HostMirror(Backend& backend, Lane lane, void* device, std::size_t n, bool read);
    HostMirror(const HostMirror&) = delete;
    HostMirror& operator=(const HostMirror&) = delete;
    /// The n floats, to read and write on the host.
    float* data() { return m_data; }
    /// Uploads the host copy back (a no-op on a host-accessible backend).
    void commit();

private:
    Backend& m_backend;
    Lane m_lane;
    void* m_device;
    std::size_t m_n;
    std::vector<float> m_copy;
    float* m_data;
};

/// RMSNorm's forward (rmsnorm.h) through the backend's kernel, with the layers' ε; rows of n elements at the
/// strides given (elements). Throws RuntimeError as the backend's kernel does.
void rmsNormForward(Backend& backend, Lane lane, const void* x, std::size_t xStride, const ParamView& norm, void* y,
    std::size_t yStride, std::size_t rows, std::size_t n);
/// RMSNorm's backward through the backend: dx += the input gradient from dy, norm.grad += the weights'. Throws
/// RuntimeError as the backend's kernel does.
void rmsNormBackward(Backend& backend, Lane lane, const void* x, std::size_t xStride, const ParamView& norm,
    const void* dy, std::size_t dyStride, void* dx, std::size_t dxStride, std::size_t rows, std::size_t n);

/// The end of a pre-norm residual block's I (or B), y = x + f(RMSNorm(x)): returns dx = dy + RMSNorm'(x)ᵀ·dxn
/// (t × h, Workspace; docs/layers.md, the norm's backward in runtime/layers/rmsnorm.h), accumulates the norm's
/// weight gradient into norm.grad and frees dxn and the kept input x. Throws RuntimeError when dx cannot be
/// allocated.
Tensor preNormResidualBackward(Backend& backend, Lane lane, const ParamView& norm, Tensor& x, Tensor& dxn,
    const Tensor& dy, std::size_t t, std::size_t h);

} // namespace dps::runtime::layers

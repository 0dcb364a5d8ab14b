#pragma once
// Check macros for CUDA, cuBLAS and NCCL calls (nccl-tests style): a failing call throws RuntimeError
// "rank R on HOST: CALL failed (FILE:LINE): REASON". The macros live in cudacheck.h (they need the CUDA
// headers); the message and the rank it names are plain host code, here.
#include <string>

namespace dps::runtime {

/// The rank named in check failures: set by the worker once it knows it; until then $OMPI_COMM_WORLD_RANK
/// ($PMIX_RANK, $PMI_RANK), else -1.
void setCheckRank(int rank);
int checkRank();

/// "rank R on HOST: CALL failed (FILE:LINE): REASON", FILE reduced to its name below engine/.
std::string checkFailureText(const char* call, const char* file, int line, const std::string& reason);

} // namespace dps::runtime

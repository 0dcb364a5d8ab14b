# dps_warnings: an INTERFACE target every one of our targets links, so our code builds clean at -Wall -Wextra.
add_library(dps_warnings INTERFACE)
add_library(dps::warnings ALIAS dps_warnings)
target_compile_options(dps_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow=local -Wno-unused-parameter>)

# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The private provider ABI of the installed libibverbs, which the provider
# is built for.  libibverbs.pc's version is 1.<API>.<rdma-core release>
# (1.14.44.0 is rdma-core 44.0).  Sets:
#   RINGNIC_RDMA_CORE        the rdma-core major release (44)
#   RINGNIC_IBVERBS_PABI     its private ABI: IBVERBS_PRIVATE_<PABI>,
#                            libringnic-rdmav<PABI>.so, verbs_register_driver_<PABI>
#   RINGNIC_IBVERBS_RUNS_ON  the libibverbs releases the build runs on,
#                            "FIRST BELOW": FIRST <= release < BELOW
# providers/ringnic/ibverbs-private.h declares the layouts of each row.
#
# Each row: the rdma-core releases built against, their PABI (rdma-core's
# CMakeLists.txt), and what the build runs on.  The provider shares memory
# layouts with libibverbs beyond what the PABI number covers, and rdma-core
# changed some within one PABI: so a build runs only on the releases whose
# layouts are its own (or, for ibv_port_attr, which libibverbs hands to the
# provider zeroed at its own size, larger).
set(_rn_ibverbs_abis
  # first last  PABI  runs on
  "44     44    34    44 45"   # 45 grew ibv_qp_ex: verbs_qp.comp_mask moved
  "45     48    34    45 57"
  "49     56    34    49 57"   # 49 grew ibv_port_attr, which query_port fills
  "57     58    57    57 59"
  "59     61    59    59 62"
  "62     63    59    62 64"   # 62 added two verbs_context_ops slots in PABI 59
  "64     64    64    64 65"
  "65     65    65    65 66")

string(REGEX MATCH "^[0-9]+\\.[0-9]+\\.([0-9]+)\\.[0-9]+" _rn_match
  "${IBVERBS_VERSION}")
if(NOT _rn_match)
  message(FATAL_ERROR "libibverbs ${IBVERBS_VERSION}: not of the form "
    "1.API.RDMA_CORE.MINOR, cannot tell its rdma-core release")
endif()
set(RINGNIC_RDMA_CORE ${CMAKE_MATCH_1})
unset(RINGNIC_IBVERBS_PABI)
foreach(_rn_row ${_rn_ibverbs_abis})
  string(REGEX MATCHALL "[0-9]+" _rn_f "${_rn_row}")
  list(GET _rn_f 0 _rn_first)
  list(GET _rn_f 1 _rn_last)
  if(RINGNIC_RDMA_CORE GREATER_EQUAL _rn_first AND
     RINGNIC_RDMA_CORE LESS_EQUAL _rn_last)
    list(GET _rn_f 2 RINGNIC_IBVERBS_PABI)
    list(SUBLIST _rn_f 3 2 RINGNIC_IBVERBS_RUNS_ON)
  endif()
endforeach()
if(NOT DEFINED RINGNIC_IBVERBS_PABI)
  message(FATAL_ERROR "libibverbs ${IBVERBS_VERSION} is rdma-core "
    "${RINGNIC_RDMA_CORE}, whose private provider ABI ringnic does not "
    "declare (it knows rdma-core 44 to 65): see "
    "providers/ringnic/ibverbs-private.h")
endif()
# Cached for scripts that read the build (tests/install-check.sh, debian/rules).
set(RINGNIC_IBVERBS_PABI ${RINGNIC_IBVERBS_PABI} CACHE INTERNAL "")
set(RINGNIC_IBVERBS_RUNS_ON "${RINGNIC_IBVERBS_RUNS_ON}" CACHE INTERNAL "")
list(JOIN RINGNIC_IBVERBS_RUNS_ON " <= rdma-core < " _rn_runs)
message(STATUS "libibverbs ${IBVERBS_VERSION}: rdma-core ${RINGNIC_RDMA_CORE}, "
  "private ABI ${RINGNIC_IBVERBS_PABI} (libringnic-rdmav${RINGNIC_IBVERBS_PABI}.so); "
  "the build runs on ${_rn_runs}")

# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Man pages: pandoc markdown PAGE.md next to what it documents, a prebuilt
# roff copy in prebuilt/PAGE beside it for builds without pandoc.
#
# rn_man_pages(PAGE...) builds and installs the pages of the current source
# dir; rn_man_check() then fails the configuration when a page exists that
# was not registered, a registered page has no prebuilt copy, or a direct
# verb (in ringnicdv.h or the version script) has no page.

option(RINGNIC_USE_PANDOC
  "build man pages from markdown with pandoc (else install the prebuilt copies)" ON)
if(RINGNIC_USE_PANDOC)
  find_program(RINGNIC_PANDOC pandoc)
  if(NOT RINGNIC_PANDOC)
    message(STATUS "pandoc not found: installing the prebuilt man pages")
  endif()
endif()

function(rn_man_pages)
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(MAKE_C_IDENTIFIER "man_${rel}" target)
  foreach(page ${ARGN})
    string(REGEX REPLACE ".*\\.([1-8])$" "\\1" section ${page})
    set(src ${CMAKE_CURRENT_SOURCE_DIR}/${page}.md)
    set(prebuilt ${CMAKE_CURRENT_SOURCE_DIR}/prebuilt/${page})
    set(out ${CMAKE_BINARY_DIR}/man/${page})
    if(RINGNIC_USE_PANDOC AND RINGNIC_PANDOC)
      add_custom_command(OUTPUT ${out}
        COMMAND ${RINGNIC_PANDOC} -s -t man ${src} -o ${out}
        DEPENDS ${src})
    else()
      add_custom_command(OUTPUT ${out}
        COMMAND ${CMAKE_COMMAND} -E copy ${prebuilt} ${out}
        DEPENDS ${prebuilt})
    endif()
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
    list(APPEND outs ${out})
    set_property(GLOBAL APPEND PROPERTY RINGNIC_MAN_SOURCES ${src})
  endforeach()
  add_custom_target(${target} ALL DEPENDS ${outs})
endfunction()

# The functions a public header declares and a version script exports.
function(rn_header_functions header prefix out)
  file(READ ${header} text)
  string(REGEX MATCHALL "[ *](${prefix}[a-z0-9_]*)\\(" calls "${text}")
  string(REGEX REPLACE "[ *]([a-z0-9_]+)\\(" "\\1" names "${calls}")
  set(${out} ${names} PARENT_SCOPE)
endfunction()

function(rn_map_functions map out)
  file(STRINGS ${map} lines REGEX "^[ \t]*[A-Za-z_][A-Za-z0-9_]*;")
  list(TRANSFORM lines STRIP)
  list(TRANSFORM lines REPLACE ";$" "")
  set(${out} ${lines} PARENT_SCOPE)
endfunction()

# HEADER and MAP: the direct verbs; each needs a registered section-3 page.
function(rn_man_check)
  cmake_parse_arguments(arg "" "HEADER;MAP" "" ${ARGN})
  get_property(registered GLOBAL PROPERTY RINGNIC_MAN_SOURCES)
  set(errors)

  # Every markdown page in a man/ dir of the sources, build dirs aside:
  # this one and any other in the tree (a CMakeCache.txt above the page),
  # which may hold pages of what it built (tests/fabtests builds fabtests).
  file(GLOB_RECURSE found ${CMAKE_SOURCE_DIR}/*.md)
  list(FILTER found INCLUDE REGEX "/man/[^/]+\\.[1-8]\\.md$")
  foreach(src ${found})
    if(src IN_LIST registered)
      continue()
    endif()
    get_filename_component(dir ${src} DIRECTORY)
    set(in_build FALSE)
    while(NOT in_build AND NOT dir STREQUAL CMAKE_SOURCE_DIR AND
          NOT dir STREQUAL "/" AND NOT dir STREQUAL "")
      if(EXISTS ${dir}/CMakeCache.txt)
        set(in_build TRUE)
      endif()
      get_filename_component(dir ${dir} DIRECTORY)
    endwhile()
    if(NOT in_build)
      list(APPEND errors "${src} is not built nor installed: add it to rn_man_pages()")
    endif()
  endforeach()

  set(pages)
  foreach(src ${registered})
    get_filename_component(dir ${src} DIRECTORY)
    get_filename_component(page ${src} NAME_WLE)
    list(APPEND pages ${page})
    if(NOT EXISTS ${dir}/prebuilt/${page})
      list(APPEND errors "${dir}/prebuilt/${page} is missing (scripts/man-prebuilt update)")
    endif()
  endforeach()

  rn_header_functions(${arg_HEADER} ringnicdv_ declared)
  rn_map_functions(${arg_MAP} exported)
  foreach(fn ${declared} ${exported})
    if(NOT "${fn}.3" IN_LIST pages)
      list(APPEND errors "${fn} has no man page ${fn}.3")
    endif()
  endforeach()
  foreach(fn ${declared})
    if(NOT fn IN_LIST exported)
      list(APPEND errors "${fn} is declared in ${arg_HEADER} but not in ${arg_MAP}")
    endif()
  endforeach()

  if(errors)
    list(REMOVE_DUPLICATES errors)
    list(JOIN errors "\n  " msg)
    message(FATAL_ERROR "man pages:\n  ${msg}")
  endif()
  # For the tests that check the pages against pandoc and the install.
  list(JOIN registered "\n" list)
  file(WRITE ${CMAKE_BINARY_DIR}/man/sources.txt "${list}\n")
endfunction()

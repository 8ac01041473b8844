# The README's C example is tests/examples/consumer.c, verbatim: the fenced block that follows the
# line "<!-- tests/examples/consumer.c -->" must equal the file, so the example users copy is the
# one the install check builds and runs.  cmake -DREADME=... -DEXAMPLE=... -P check_readme.cmake
file(READ "${README}" readme)
file(READ "${EXAMPLE}" example)
string(FIND "${readme}" "<!-- tests/examples/consumer.c -->\n```c\n" at)
if(at LESS 0)
  message(FATAL_ERROR "README.md has no '<!-- tests/examples/consumer.c -->' line followed by a ```c block")
endif()
string(LENGTH "<!-- tests/examples/consumer.c -->\n```c\n" skip)
math(EXPR at "${at} + ${skip}")
string(SUBSTRING "${readme}" ${at} -1 rest)
string(FIND "${rest}" "```\n" end)
string(SUBSTRING "${rest}" 0 ${end} block)
if(NOT block STREQUAL example)
  file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/readme_example.c" "${block}")
  message(FATAL_ERROR "README.md's example differs from ${EXAMPLE}: diff ${EXAMPLE} ${CMAKE_CURRENT_BINARY_DIR}/readme_example.c")
endif()
message(STATUS "README.md's example equals ${EXAMPLE}")

# cmake -DTOOL=<path> -DNAME=<tool name> -DVERSION=<x.y.z> -P check_conventions.cmake
# Checks the command-line conventions of tools/cli.h on one tool: -h/--help
# print usage on stdout and exit 0, --version prints "<name> <version>", and
# misuse (an unknown option, a missing value, no arguments) is exactly one line
# on stderr, nothing on stdout, exit status 2.
foreach(_v TOOL NAME VERSION)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "check_conventions.cmake: -D${_v}=... is required")
  endif()
endforeach()

function(fail what)
  message(SEND_ERROR "${NAME}: ${what}")
endfunction()

# run(<expected status> <stdout regex or ""> <stderr: "one-line"|"empty"> args...)
function(run want_status want_out want_err)
  execute_process(COMMAND "${TOOL}" ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err
                  TIMEOUT 60)
  set(cmd "'${NAME} ${ARGN}'")
  if(NOT status STREQUAL "${want_status}")
    fail("${cmd} exited with '${status}', expected ${want_status}; stderr: ${err}")
  endif()
  if(want_out STREQUAL "")
    if(NOT out STREQUAL "")
      fail("${cmd} wrote to stdout: ${out}")
    endif()
  elseif(NOT out MATCHES "${want_out}")
    fail("${cmd}: stdout does not match '${want_out}': ${out}")
  endif()
  if(want_err STREQUAL "empty" AND NOT err STREQUAL "")
    fail("${cmd} wrote to stderr: ${err}")
  elseif(want_err STREQUAL "one-line")
    string(REGEX MATCHALL "\n" newlines "${err}")
    list(LENGTH newlines n)
    if(NOT n EQUAL 1 OR NOT err MATCHES "^${NAME}: .*--help shows the usage\n$")
      fail("${cmd}: stderr is not one '${NAME}: ...' line: '${err}'")
    endif()
    set(last_error "${err}" PARENT_SCOPE)
  endif()
endfunction()

run(0 "^usage:" empty --help)
run(0 "^usage:" empty -h)
run(0 "^usage:" empty --bogus-option --help)  # help wins over a mistake on the same line
string(REPLACE "." "\\." _version_re "${VERSION}")
run(0 "^${NAME} ${_version_re}\n$" empty --version)

run(2 "" one-line --bogus-option)
if(NOT last_error MATCHES "unknown.*option '--bogus-option'")
  fail("the error does not name the unknown option: ${last_error}")
endif()
run(2 "" one-line -z)
run(2 "" one-line)  # no arguments at all

# Writes OUT, a header defining SEQD_GIT_COMMIT: the source tree's commit
# (12 hex digits, "-dirty" if tracked files changed). Outside a git checkout:
# the environment variable SEQD_GIT_COMMIT if set (the container build, whose
# context has no .git), else "unknown". Rewrites OUT only when that changes,
# so an unchanged commit rebuilds nothing. Run at every build:
# cmake -DSRC=... -DOUT=... -P this.
set(commit "unknown")
find_program(GIT git)
if(GIT)
  execute_process(COMMAND "${GIT}" -C "${SRC}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE rc ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(rc EQUAL 0 AND head)
    set(commit "${head}")
    execute_process(COMMAND "${GIT}" -C "${SRC}" diff --quiet HEAD --
                    RESULT_VARIABLE dirty ERROR_QUIET)
    if(NOT dirty EQUAL 0)
      set(commit "${commit}-dirty")
    endif()
  endif()
endif()
if(commit STREQUAL "unknown" AND NOT "$ENV{SEQD_GIT_COMMIT}" STREQUAL "")
  set(commit "$ENV{SEQD_GIT_COMMIT}")
endif()
set(text "#pragma once\n#define SEQD_GIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()

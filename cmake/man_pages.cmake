# Man pages for seqd, seqctl and seqbench (section 1), made at build time by
# help2man from each program's --help and --version output, gzipped as Debian
# policy asks (gzip -9n) into <build>/man, and installed by the .deb
# (cmake/packaging.cmake).
#
# SEQD_MAN_PAGES is ON by default, and then help2man is required: configuring
# without it fails and says how to install it, rather than make a package
# without man pages. OFF (the container image, which ships none) builds no
# pages, and cpack then refuses to make the .deb.
option(SEQD_MAN_PAGES "Make the man pages with help2man (the .deb needs them)" ON)
set(SEQD_MAN_PAGE_FILES)
if(SEQD_MAN_PAGES)
  find_program(HELP2MAN help2man)
  if(NOT HELP2MAN)
    message(FATAL_ERROR "help2man not found; the man pages are made with it. Install it "
      "(apt-get install help2man, or scripts/deps.sh), or configure with "
      "-DSEQD_MAN_PAGES=OFF for a build that makes no package.")
  endif()
  find_program(GZIP gzip REQUIRED)
  set(man_dir ${CMAKE_BINARY_DIR}/man)
  foreach(page
      "seqd|ID and sequence server: segment IDs, snowflake IDs and message seqs"
      "seqctl|command-line client for seqd"
      "seqbench|load generator for seqd")
    string(REPLACE "|" ";" page "${page}")
    list(GET page 0 program)
    list(GET page 1 summary)
    add_custom_command(OUTPUT ${man_dir}/${program}.1.gz
      COMMAND ${CMAKE_COMMAND} -E make_directory ${man_dir}
      COMMAND ${HELP2MAN} --no-info --section=1 --name=${summary}
              --output=${man_dir}/${program}.1 $<TARGET_FILE:${program}>
      COMMAND ${GZIP} -9nf ${man_dir}/${program}.1
      DEPENDS ${program}
      COMMENT "help2man: ${program}.1.gz"
      VERBATIM)
    list(APPEND SEQD_MAN_PAGE_FILES ${man_dir}/${program}.1.gz)
  endforeach()
  add_custom_target(man_pages ALL DEPENDS ${SEQD_MAN_PAGE_FILES})
endif()

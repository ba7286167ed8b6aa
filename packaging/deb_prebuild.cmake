# CPack's pre-build script for the .deb (CPACK_PRE_BUILD_SCRIPTS): in the
# staging tree, before the package is made, compresses the manual page and
# adds the Debian changelog, as Debian's policy wants them (gzip -9n: no
# name or time stamp, so the package is reproducible). `cmake --install`
# keeps the page uncompressed and has no changelog.
file(GLOB_RECURSE pages "${CPACK_TEMPORARY_DIRECTORY}/devtrace.1") # under any staging root, in share/man/man1
foreach(page ${pages})
  execute_process(COMMAND gzip -9nf "${page}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${page} failed")
  endif()
endforeach()
file(GLOB_RECURSE copyrights "${CPACK_TEMPORARY_DIRECTORY}/copyright") # share/doc/devtrace/copyright
foreach(c ${copyrights})
  get_filename_component(doc "${c}" DIRECTORY)
  execute_process(COMMAND gzip -9n INPUT_FILE "${CPACK_DEVTRACE_CHANGELOG}" OUTPUT_FILE "${doc}/changelog.gz" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip of the changelog failed")
  endif()
endforeach()
if(NOT pages OR NOT copyrights)
  message(FATAL_ERROR "devtrace: the staging tree under ${CPACK_TEMPORARY_DIRECTORY} has no devtrace.1 or copyright")
endif()

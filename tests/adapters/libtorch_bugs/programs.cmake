# How a libtorch bug program of tests/adapters/libtorch_bugs/ is built, as users build theirs (-O1 -g, C++17):
# included by tests/CMakeLists.txt and by the project libtorch_fix.sh writes for the patched copies, so
# both compile with the same flags. DT_LIBTORCH_NO_DEBUG_INFO (libtorch_fix.sh's copies): without -g, which
# only costs time there (the copies are run, never debugged; -g is most of a compile of torch's headers).
set(DT_LIBTORCH_BUGS batch_target gan_noise model_not_moved helper_const inline_noise)
function(dt_libtorch_program name src)
  add_executable(${name} ${src})
  set_target_properties(${name} PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  if(DT_LIBTORCH_NO_DEBUG_INFO) # -g0 last: it undoes a build type's -g (RelWithDebInfo) too
    target_compile_options(${name} PRIVATE -O1 -g0 ${TORCH_CXX_FLAGS})
  else()
    target_compile_options(${name} PRIVATE -O1 -g ${TORCH_CXX_FLAGS})
  endif()
  target_include_directories(${name} SYSTEM PRIVATE ${TORCH_INCLUDE_DIRS})
  target_link_libraries(${name} PRIVATE ${TORCH_LIBRARIES})
endfunction()

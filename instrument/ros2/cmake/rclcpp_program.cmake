# What a C++ program built against a pip-installed ROS 2 and roscope's cached rclcpp needs
# (docs/rclcpp.md): included by examples/ros2_cpp_pipeline, tests/fixtures/ros2_tracing_nodes
# and bench/rclcpp_overhead after their ROS2_ENV and RCLCPP_PREFIX are set. Not part of
# wheel_mends.cmake: the rclcpp cache is keyed on that file, and this one serves only programs.
if(NOT ROS2_ENV OR NOT RCLCPP_PREFIX)
  message(FATAL_ERROR "set ROS2_ENV and RCLCPP_PREFIX before including rclcpp_program.cmake")
endif()
list(PREPEND CMAKE_PREFIX_PATH "${RCLCPP_PREFIX}" "${ROS2_ENV}")
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)

# Where a program finds its libraries at run time: rclcpp's install, the environment's lib/ and
# the wheels' bundled libraries (*.libs: Fast DDS's OpenSSL, ...), as an RPATH (not RUNPATH: it
# serves the libraries' own dependencies too); the linker needs them as -rpath-link.
file(GLOB wheel_libs LIST_DIRECTORIES true "${ROS2_ENV}/lib/python3*/site-packages/*.libs")
set(runtime_dirs "${RCLCPP_PREFIX}/lib" "${ROS2_ENV}/lib" ${wheel_libs})
list(JOIN runtime_dirs ":" runtime_path)
set(CMAKE_BUILD_RPATH ${runtime_dirs})
add_link_options("LINKER:--disable-new-dtags" "LINKER:-rpath-link,${runtime_path}")

# roscope_cpp_targets(OUT pkg...): the message packages' C and C++ parts, their <pkg>_TARGETS
# without the Python bindings (which need libpython).
function(roscope_cpp_targets out)
  set(all)
  foreach(pkg IN LISTS ARGN)
    foreach(t IN LISTS ${pkg}_TARGETS)
      if(NOT t MATCHES "__rosidl_generator_py$")
        list(APPEND all ${t})
      endif()
    endforeach()
  endforeach()
  set(${out} ${all} PARENT_SCOPE)
endfunction()

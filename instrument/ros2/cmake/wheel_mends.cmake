# Mends for building C++ against a pip-installed ROS 2 (docs/rclcpp.md, "The mends").
#
# Given as CMAKE_PROJECT_INCLUDE (-DCMAKE_PROJECT_INCLUDE=this file) to every CMake project
# built against .ros2/<distro>: scripts/rclcpp_setup.sh's packages and the C++ examples. It
# changes nothing in the environment: at the end of the top-level directory (a deferred call,
# when every find_package has created its imported targets) it rewrites the properties of
# the imported targets of that directory that name the machine that built the wheels:
#
#   /opt/python/cp3XX-cp3XX/include/python3.XX          -> this Python's include directory
#   /opt/python/.../site-packages/numpy/_core/include    -> this numpy's include directory
#   /usr/lib64/libtinyxml2.so (fastrtps-shared-targets)  -> the system's libtinyxml2
#
# and it drops the *__rosidl_generator_py libraries (Python extensions' C parts, whose Python
# symbols only a Python process resolves) from the link interface of every other imported
# target and from the links of the project's own C/C++ targets: a C++ library or program
# links the C and C++ type supports of a message package's <pkg>_TARGETS, not its Python
# bindings (which would need libpython). The wheels' librcl, librcl_action and
# librcl_lifecycle do list Python bindings as needed libraries, though: a target importing such
# a library gets libpython (this Python's) in its link interface.
#
# The Python is ROSCOPE_WHEEL_PYTHON, else Python3_EXECUTABLE, else python3 on PATH.
cmake_minimum_required(VERSION 3.24)

# A link feature (CMake >= 3.24) that keeps a library a program does not reference itself:
# the linker here drops such libraries (--as-needed), libpython among them.
set(CMAKE_LINK_LIBRARY_USING_ROSCOPE_NO_AS_NEEDED
    "LINKER:--push-state,--no-as-needed" "<LINK_ITEM>" "LINKER:--pop-state")
set(CMAKE_LINK_LIBRARY_USING_ROSCOPE_NO_AS_NEEDED_SUPPORTED TRUE)

get_property(_roscope_mends_registered GLOBAL PROPERTY ROSCOPE_WHEEL_MENDS_REGISTERED)
if(NOT _roscope_mends_registered)
  set_property(GLOBAL PROPERTY ROSCOPE_WHEEL_MENDS_REGISTERED TRUE)

  function(_roscope_wheel_mends)
    if(ROSCOPE_WHEEL_PYTHON)
      set(py "${ROSCOPE_WHEEL_PYTHON}")
    elseif(Python3_EXECUTABLE)
      set(py "${Python3_EXECUTABLE}")
    else()
      find_program(py NAMES python3 REQUIRED)
    endif()
    execute_process(
      COMMAND "${py}" -c "import sysconfig; print(sysconfig.get_paths()['include'])"
      OUTPUT_VARIABLE py_include OUTPUT_STRIP_TRAILING_WHITESPACE)
    execute_process(
      COMMAND "${py}" -c "import numpy; print(numpy.get_include())"
      OUTPUT_VARIABLE numpy_include OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(
      COMMAND "${py}" -c "import sysconfig, os; print(os.path.join(sysconfig.get_config_var('LIBDIR'), sysconfig.get_config_var('LDLIBRARY')))"
      OUTPUT_VARIABLE libpython OUTPUT_STRIP_TRAILING_WHITESPACE)
    find_library(_roscope_tinyxml2 NAMES tinyxml2)
    get_property(targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
    set(mended 0)
    foreach(t IN LISTS targets)
      foreach(prop IN ITEMS INTERFACE_INCLUDE_DIRECTORIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES
                            INTERFACE_LINK_LIBRARIES)
        get_target_property(v ${t} ${prop})
        if(NOT v)
          continue()
        endif()
        set(n "${v}")
        if(py_include)
          string(REGEX REPLACE "/opt/python/cp3[0-9]+-cp3[0-9]+/include/python3\\.[0-9]+"
                 "${py_include}" n "${n}")
        endif()
        if(numpy_include)
          string(REGEX REPLACE "/opt/python/cp3[0-9]+-cp3[0-9]+/lib/python3\\.[0-9]+/site-packages/numpy/(_core|core)/include"
                 "${numpy_include}" n "${n}")
        endif()
        if(_roscope_tinyxml2 AND NOT EXISTS "/usr/lib64/libtinyxml2.so")
          string(REPLACE "/usr/lib64/libtinyxml2.so" "${_roscope_tinyxml2}" n "${n}")
        endif()
        if(prop STREQUAL "INTERFACE_LINK_LIBRARIES" AND NOT t MATCHES "__rosidl_generator_py$")
          list(FILTER n EXCLUDE REGEX "__rosidl_generator_py(\\.so)?>?$")
        endif()
        if(NOT n STREQUAL v)
          set_target_properties(${t} PROPERTIES ${prop} "${n}")
          math(EXPR mended "${mended} + 1")
        endif()
      endforeach()
      # A wheel library that itself needs Python bindings (librcl.so lists
      # librcl_interfaces__rosidl_generator_py.so, ...): whoever links it links libpython, the
      # Python symbols those bindings leave undefined (data ones are bound at load time).
      if(EXISTS "${libpython}" AND NOT t MATCHES "__rosidl_generator_py$")
        get_target_property(type ${t} TYPE)
        if(type STREQUAL "SHARED_LIBRARY")
          get_target_property(configs ${t} IMPORTED_CONFIGURATIONS)
          set(locs)
          foreach(c IN LISTS configs)
            get_target_property(loc ${t} IMPORTED_LOCATION_${c})
            list(APPEND locs ${loc})
          endforeach()
          get_target_property(loc ${t} IMPORTED_LOCATION)
          list(APPEND locs ${loc})
          foreach(loc IN LISTS locs)
            if(loc AND EXISTS "${loc}")
              file(STRINGS "${loc}" needs_py REGEX "__rosidl_generator_py\\.so$" LIMIT_COUNT 1)
              if(needs_py)
                set_property(TARGET ${t} APPEND PROPERTY INTERFACE_LINK_LIBRARIES
                             "$<LINK_LIBRARY:ROSCOPE_NO_AS_NEEDED,${libpython}>")
                math(EXPR mended "${mended} + 1")
                break()
              endif()
            endif()
          endforeach()
        endif()
      endif()
    endforeach()
    # The project's own targets: a C++ library or program links no Python binding either
    # (rclcpp links ${rcl_interfaces_TARGETS}, which lists them); the Python side of a message
    # package (its __rosidl_generator_py library and the _s__ extension modules) keeps them.
    set(dirs "${CMAKE_SOURCE_DIR}")
    set(dropped 0)
    while(dirs)
      list(POP_FRONT dirs dir)
      get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
      list(APPEND dirs ${subdirs})
      get_property(own DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
      foreach(t IN LISTS own)
        if(t MATCHES "__rosidl_generator_py$|_s__rosidl_typesupport_|__pyext$")
          continue()
        endif()
        foreach(prop IN ITEMS LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
          get_target_property(v ${t} ${prop})
          if(NOT v)
            continue()
          endif()
          set(n "${v}")
          list(FILTER n EXCLUDE REGEX "__rosidl_generator_py(\\.so)?>?$")
          if(NOT n STREQUAL v)
            set_target_properties(${t} PROPERTIES ${prop} "${n}")
            math(EXPR dropped "${dropped} + 1")
          endif()
        endforeach()
      endforeach()
    endwhile()
    message(STATUS "roscope wheel mends: ${mended} imported target properties rewritten, "
                   "Python bindings dropped from ${dropped} link properties of the project's targets")
  endfunction()

  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _roscope_wheel_mends)
endif()

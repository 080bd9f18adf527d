# fusegen._torchread (fusegen/_torchread.cpp): torch tensors read through
# torch's C++ API, built against the torch importable now (pip install
# --no-build-isolation), used only with that torch (fusegen/_function.py).
# FUSEGEN_TORCH_READER=0 (environment) leaves it out. Optional: without torch,
# or where it fails to configure, the C call path reads tensors through their
# Python accessors.
if("$ENV{FUSEGEN_TORCH_READER}" STREQUAL "0")
  return()
endif()
execute_process(
  COMMAND ${Python_EXECUTABLE} -c "import os, torch
from torch.utils import cpp_extension
print(';'.join(cpp_extension.include_paths()))
print(os.path.join(os.path.dirname(torch.__file__), 'lib'))
print(int(getattr(torch._C, '_GLIBCXX_USE_CXX11_ABI', True)))
print(torch.__version__)"
  RESULT_VARIABLE _fusegen_torch_rc OUTPUT_VARIABLE _fusegen_torch ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _fusegen_torch_rc EQUAL 0)
  message(STATUS "fusegen: torch is not importable at build time: no fusegen._torchread")
  return()
endif()
# Lines: the include folders (a list), the lib folder, the ABI, the version.
string(REPLACE "\n" ";" _fusegen_torch "${_fusegen_torch}")
list(POP_BACK _fusegen_torch _fusegen_torch_version)
list(POP_BACK _fusegen_torch _fusegen_torch_abi)
list(POP_BACK _fusegen_torch _fusegen_torch_lib)
set(_fusegen_torch_includes ${_fusegen_torch})
message(STATUS "fusegen: building fusegen._torchread against torch ${_fusegen_torch_version}")

Python_add_library(fusegen_torchread MODULE WITH_SOABI ${CMAKE_CURRENT_SOURCE_DIR}/fusegen/_torchread.cpp)
set_target_properties(fusegen_torchread PROPERTIES OUTPUT_NAME _torchread CXX_VISIBILITY_PRESET hidden
  BUILD_RPATH ${_fusegen_torch_lib} INSTALL_RPATH ${_fusegen_torch_lib})
# The project's standard, as everywhere else (torch's headers support it).
target_compile_features(fusegen_torchread PRIVATE cxx_std_20)
target_include_directories(fusegen_torchread SYSTEM PRIVATE ${_fusegen_torch_includes})
target_compile_definitions(fusegen_torchread PRIVATE _GLIBCXX_USE_CXX11_ABI=${_fusegen_torch_abi}
  FUSEGEN_TORCH_VERSION="${_fusegen_torch_version}")
target_link_directories(fusegen_torchread PRIVATE ${_fusegen_torch_lib})
target_link_libraries(fusegen_torchread PRIVATE c10 torch torch_cpu torch_python)
install(TARGETS fusegen_torchread LIBRARY DESTINATION fusegen COMPONENT python)

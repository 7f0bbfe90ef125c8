# lit configuration for SpikeMesh's compiler tests (passes, importer, exporter, tools):
# Dialect/, Import/, Export/ and Tools/ hold the tests, helpers/ the scripts their RUN lines call.
import os
import lit.formats

config.name = "SpikeMesh"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["Inputs", "helpers", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.snn_obj_root, "test", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.snn_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
# Plans in these tests use the default constants, whatever profile the developer calibrated.
config.environment["SPIKEMESH_DEVICE_PROFILE"] = "none"
config.environment["PYTHONPATH"] = os.path.join(config.snn_src_root, "python_export")

tools = os.path.join(config.snn_src_root, "test", "lit", "helpers")
config.substitutions.append(("%python", config.python))
config.substitutions.append(
    ("%onnx-from-text", config.python + " " + os.path.join(tools, "onnx_from_text.py")))
config.substitutions.append(
    ("%dump-onnx", config.python + " " + os.path.join(tools, "dump_onnx.py")))
config.substitutions.append(
    ("%check-pipeline", config.python + " " + os.path.join(tools, "check_pipeline_artifact.py")))
config.substitutions.append(
    ("%nir-from-json", config.python + " " + os.path.join(tools, "nir_from_json.py")))
config.substitutions.append(
    ("%nir-files", os.path.join(config.snn_src_root, "test", "import", "nir")))

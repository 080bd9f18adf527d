"""module_arguments on module-like objects (no torch needed: attributes and fake arrays)."""

import types
import unittest

import support
from support import FakeArray, fusegen


def fake_model():
    return types.SimpleNamespace(
        fc=types.SimpleNamespace(weight=FakeArray((256, 512)), bias=FakeArray((256,))),
        gn=types.SimpleNamespace(weight=FakeArray((256,)), bias=FakeArray((256,))),
        scale=FakeArray((256, 1, 1)),
        nothing=None)


class ModuleArgumentsTest(unittest.TestCase):
    def test_by_dotted_name(self):
        model = fake_model()
        x = FakeArray((8, 512))
        arguments = fusegen.module_arguments(model, {"w": "fc.weight", "b": "fc.bias", "gn_w": "gn.weight"}, x=x)
        self.assertIs(arguments["w"], model.fc.weight)
        self.assertIs(arguments["gn_w"], model.gn.weight)
        self.assertIs(arguments["x"], x)
        self.assertEqual(list(arguments), ["w", "b", "gn_w", "x"])

    def test_missing_attribute_is_named(self):
        with self.assertRaises(fusegen.ArgumentError) as caught:
            fusegen.module_arguments(fake_model(), {"w": "fc.weight", "gn_b": "gn.bais"})
        self.assertIn("'gn_b' -> 'gn.bais': SimpleNamespace.gn (SimpleNamespace) has no attribute 'bais'",
                      str(caught.exception))
        with self.assertRaisesRegex(fusegen.ArgumentError, "'w' -> 'gemm.weight': SimpleNamespace .* has no "
                                                           "attribute 'gemm'"):
            fusegen.module_arguments(fake_model(), {"w": "gemm.weight"})

    def test_none_attribute(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, "'b' -> 'nothing' is None"):
            fusegen.module_arguments(fake_model(), {"b": "nothing"})

    def test_given_tensor_and_duplicates(self):
        given = FakeArray((256,))
        self.assertIs(fusegen.module_arguments(fake_model(), {"b": given})["b"], given)
        with self.assertRaisesRegex(fusegen.ArgumentError, "'b' is given twice"):
            fusegen.module_arguments(fake_model(), {"b": "fc.bias"}, b=given)


@support.requires_library
class ModuleArgumentsWithFunctionTest(unittest.TestCase):
    SPEC = """
fusion f {
  input x : f32[N, 256]
  param w : f32[256, 512]
  param s : f32[256]
  param t : f32[256, 1, 1]
  output y = x * s
}
"""

    @classmethod
    def setUpClass(cls):
        runtime = fusegen.Runtime(cache_dir=support.CACHE_DIR)
        cls.f = runtime.load_string(cls.SPEC, name="modules.fg").function("f")

    def test_reshaped_views(self):
        model = fake_model()
        arguments = fusegen.module_arguments(model, {"w": "fc.weight", "s": "scale", "t": "fc.bias"},
                                             function=self.f, x=FakeArray((8, 256)))
        self.assertIs(arguments["w"], model.fc.weight)  # the right shape: itself
        # Same elements, another shape: a view of the same memory, never a copy.
        for name, base, shape in (("s", model.scale, (256,)), ("t", model.fc.bias, (256, 1, 1))):
            view = arguments[name].__cuda_array_interface__
            self.assertEqual(view["shape"], shape)
            self.assertEqual(view["data"], base.__cuda_array_interface__["data"])

    def test_reshape_needs_same_size_and_contiguity(self):
        model = fake_model()
        with self.assertRaisesRegex(fusegen.ArgumentError, r"'s' -> 'fc.weight' has shape \[256, 512\]; f needs \[256\]"):
            fusegen.module_arguments(model, {"s": "fc.weight"}, function=self.f)
        model.scale = FakeArray((256, 1, 1), strides=(8, 4, 4))
        with self.assertRaisesRegex(fusegen.ArgumentError, "not contiguous"):
            fusegen.module_arguments(model, {"s": "scale"}, function=self.f)

    def test_unknown_spec_name(self):
        with self.assertRaisesRegex(fusegen.ArgumentError, "f has no argument 'gn_w'; its arguments are x, w, s, t"):
            fusegen.module_arguments(fake_model(), {"gn_w": "gn.weight"}, function=self.f)


if __name__ == "__main__":
    unittest.main()

"""Bad URDF/MJCF input: each error names the file, the line and the element (exact messages)."""
from __future__ import annotations

import warnings

import pytest

import sim

LINK = '<link name="{n}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1"/></inertial></link>'


def links(*names):
    return "\n".join(LINK.format(n=n) for n in names)


def rev(name, parent, child, extra='<limit lower="-1" upper="1"/>'):
    return (f'<joint name="{name}" type="revolute"><parent link="{parent}"/><child link="{child}"/>'
            f'{extra}</joint>')


URDF_CASES = {
    "malformed": ('<robot name="r">\n<link name="a">\n</robot>',
                  "{f}:3: malformed XML: mismatched tag (column 3)"),
    "not_urdf": ('<mujoco/>', "{f}:1: <mujoco>: the root element must be <robot> (is this a URDF file?)"),
    "missing_mesh": ('<robot name="r">\n<link name="a"><collision><geometry>\n'
                     '<mesh filename="meshes/nope.stl"/></geometry></collision></link>\n</robot>',
                     "{f}:3: <mesh>: mesh file 'meshes/nope.stl' not found (looked for {d}/meshes/nope.stl)"),
    "second_parent": (f'<robot name="r">\n{links("a", "b", "c")}\n{rev("j1", "a", "c")}\n{rev("j2", "b", "c")}\n'
                      f'</robot>',
                      "{f}:6: <joint name='j2'>: link 'c' already has a parent: joint 'j1' (line 5) connects it "
                      "to 'a'"),
    "cycle": (f'<robot name="r">\n{links("a", "b", "c")}\n{rev("j1", "a", "b")}\n{rev("j2", "b", "c")}\n'
              f'{rev("j3", "c", "a")}\n</robot>',
              "{f}:1: <robot name='r'>: the joints form a cycle (every link has a parent): 'b' <- 'a' <- 'c' <- 'b'"),
    "cycle_beside_root": (f'<robot name="r">\n{links("r", "a", "b")}\n{rev("j1", "a", "b")}\n{rev("j2", "b", "a")}\n'
                          f'</robot>',
                          "{f}:1: <robot name='r'>: the joints form a cycle: 'b' <- 'a' <- 'b'"),
    "zero_axis": (f'<robot name="r">\n{links("a", "b")}\n'
                  f'{rev("j", "a", "b", chr(10) + "<axis xyz=" + chr(34) + "0 0 0" + chr(34) + "/>")}\n</robot>',
                  "{f}:5: <axis>: the joint axis [0.0, 0.0, 0.0] has zero length"),
    "unknown_link": (f'<robot name="r">\n{links("a")}\n{rev("j", "a", "zz")}\n</robot>',
                     "{f}:3: <joint name='j'>: child link 'zz' is not defined"),
    "two_roots": (f'<robot name="r">\n{links("a", "b")}\n</robot>',
                  "{f}:3: <link name='b'>: the robot has 2 root links (a, b); a URDF must be one tree (connect them "
                  "with joints)"),
    "bad_number": ('<robot name="r">\n<link name="a"><inertial><mass value="heavy"/></inertial></link>\n</robot>',
                   "{f}:2: <mass>: attribute value='heavy' must be 1 number(s)"),
    "xacro": ('<robot name="r" xmlns:xacro="http://www.ros.org/wiki/xacro">\n<xacro:macro name="m"/>\n</robot>',
              "{f}:2: <xacro:macro name='m'>: xacro macros are not URDF: expand the file with `xacro` first"),
    "limits_missing": (f'<robot name="r">\n{links("a", "b")}\n{rev("j", "a", "b", "")}\n</robot>',
                       "{f}:4: <joint name='j'>: a revolute joint needs a <limit> element (URDF requires it; use "
                       "type 'continuous' for an unlimited revolute joint)"),
    "degenerate_inertia": ('<robot name="r">\n<link name="a"><inertial><mass value="1"/>\n'
                           '<inertia ixx="1" iyy="1" izz="5"/></inertial></link>\n</robot>',
                           "{f}:2: <link name='a'>: add_body: inertia is degenerate (principal moments "
                           "[1.0, 1.0, 5.0])"),
    "massless_moving": (f'<robot name="r">\n{links("a")}\n<link name="b"/>\n{rev("j", "a", "b")}\n</robot>',
                        "{f}:3: <link name='b'>: body 'b' has no mass (no inertial and no geometry with volume) but "
                        "joint 'j' moves it; give it an inertial"),
}


@pytest.mark.parametrize("case", sorted(URDF_CASES))
def test_urdf_errors(tmp_path, case):
    text, expected = URDF_CASES[case]
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.raises(sim.ModelFileError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore", sim.ModelImportWarning)
        sim.parse_urdf(str(path), sim.ModelBuilder(), floating=True)
    assert str(e.value) == "parse_urdf: " + expected.format(f=path, d=tmp_path)


def test_missing_file(tmp_path):
    with pytest.raises(sim.ModelFileError, match=r"^parse_urdf: .*nope.urdf: file not found$"):
        sim.parse_urdf(str(tmp_path / "nope.urdf"), sim.ModelBuilder())
    with pytest.raises(sim.ModelFileError, match=r"^parse_mjcf: .*nope.xml: file not found$"):
        sim.parse_mjcf(str(tmp_path / "nope.xml"), sim.ModelBuilder())


BODY = '<body name="{n}"><joint name="j{n}"/><geom size="0.1"/>{inner}</body>'

MJCF_CASES = {
    "malformed": ('<mujoco>\n<worldbody>\n</mujoco>', "{f}:3: malformed XML: mismatched tag (column 3)"),
    "missing_include": ('<mujoco>\n<include file="parts/none.xml"/>\n</mujoco>',
                        "{f}:2: <include>: included file 'parts/none.xml' not found (looked for {d}/parts/none.xml)"),
    "self_include": ('<mujoco>\n<include file="model.xml"/>\n</mujoco>',
                     "{f}:2: <include>: 'model.xml' includes itself (through model.xml)"),
    "missing_mesh_file": ('<mujoco>\n<asset>\n<mesh name="m" file="nope.stl"/>\n</asset>\n</mujoco>',
                          "{f}:3: <mesh name='m'>: mesh file 'nope.stl' not found (looked for {d}/nope.stl)"),
    "undefined_mesh": ('<mujoco><worldbody>\n<body><geom type="mesh" mesh="m"/></body>\n</worldbody></mujoco>',
                       "{f}:2: <geom>: mesh 'm' is not defined in <asset>"),
    "zero_axis": ('<mujoco><worldbody>\n<body name="a">\n<joint axis="0 0 0"/><geom size="1"/></body>\n'
                  '</worldbody></mujoco>', "{f}:3: <joint>: the joint axis [0.0, 0.0, 0.0] has zero length"),
    "undefined_class": ('<mujoco><worldbody>\n<body name="a">\n<geom class="big" size="1"/></body>\n'
                        '</worldbody></mujoco>', "{f}:3: <geom>: default class 'big' is not defined"),
    "bad_geom_size": ('<mujoco><worldbody>\n<body name="a">\n<geom type="box" size="1 2"/></body>\n'
                      '</worldbody></mujoco>',
                      "{f}:3: <geom>: a box geom needs 3 positive size value(s), got size='1 2'"),
    "actuator_joint": ('<mujoco><worldbody><body name="a"><joint name="j"/><geom size="1"/></body></worldbody>\n'
                       '<actuator>\n<motor joint="jj"/>\n</actuator></mujoco>',
                       "{f}:3: <motor>: joint 'jj' is not defined"),
    "nested_free": ('<mujoco><worldbody><body name="a"><geom size="1"/>\n<body name="b">\n<freejoint/>'
                    '<geom size="1"/></body></body></worldbody></mujoco>',
                    "{f}:3: <freejoint>: a free joint must be the only joint of a body that is a child of the world "
                    "body"),
    "bad_angle": ('<mujoco>\n<compiler angle="grad"/>\n</mujoco>',
                  "{f}:2: <compiler>: angle must be 'degree' or 'radian', got 'grad'"),
    "not_mjcf": ('<robot/>', "{f}:1: <robot>: the root element must be <mujoco> (is this an MJCF file?)"),
}


@pytest.mark.parametrize("case", sorted(MJCF_CASES))
def test_mjcf_errors(tmp_path, case):
    text, expected = MJCF_CASES[case]
    path = tmp_path / "model.xml"
    path.write_text(text)
    with pytest.raises(sim.ModelFileError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore", sim.ModelImportWarning)
        sim.parse_mjcf(str(path), sim.ModelBuilder())
    assert str(e.value) == "parse_mjcf: " + expected.format(f=path, d=tmp_path)


def test_error_in_an_included_file_names_that_file(tmp_path):
    (tmp_path / "main.xml").write_text('<mujoco>\n<include file="part.xml"/>\n</mujoco>')
    (tmp_path / "part.xml").write_text('<mujoco>\n<worldbody>\n<body>\n<joint type="screw"/>\n</body>\n'
                                       '</worldbody>\n</mujoco>')
    with pytest.raises(sim.ModelFileError) as e:
        sim.parse_mjcf(str(tmp_path / "main.xml"), sim.ModelBuilder())
    assert str(e.value) == (f"parse_mjcf: {tmp_path}/part.xml:4: <joint>: joint type 'screw' is not one of hinge, "
                            f"slide, ball, free")
    (tmp_path / "part.xml").write_text('<mujoco>\n<worldbody>\n</mujoco>')
    with pytest.raises(sim.ModelFileError) as e:
        sim.parse_mjcf(str(tmp_path / "main.xml"), sim.ModelBuilder())
    assert str(e.value) == (f"parse_mjcf: {tmp_path}/main.xml:2: <include>: in the included file: "
                            f"{tmp_path}/part.xml:3: malformed XML: mismatched tag (column 3)")


def test_mjcf_unsupported_elements_warn(tmp_path):
    path = tmp_path / "model.xml"
    path.write_text('<mujoco>\n<worldbody><body name="a"><joint name="j" frictionloss="3"/><geom size="1" '
                    'friction="0.5"/></body></worldbody>\n<tendon><fixed name="t"/></tendon>\n<sensor/>\n</mujoco>')
    with pytest.warns(sim.ModelImportWarning) as rec:
        r = sim.parse_mjcf(str(path), sim.ModelBuilder())
    texts = {str(w.message) for w in rec}
    f = str(path)
    assert f"parse_mjcf: {f}:2: <joint name='j'>: joint frictionloss is not supported (ignored)" in texts
    assert f"parse_mjcf: {f}:3: <fixed name='t'>: <tendon><fixed> is not supported (ignored): the simulation " \
           f"lacks it" in texts
    assert any(w.startswith(f"{f}:2: <geom>: contact parameters friction") for w in r.warnings)
    assert any(n.startswith(f"{f}:4: <sensor>: <sensor> carries no dynamics") for n in r.notes)


def test_massless_floating_base(tmp_path):
    path = tmp_path / "robot.urdf"
    path.write_text('<robot name="r">\n<link name="base"/>\n</robot>')
    with pytest.raises(sim.ModelFileError) as e:
        sim.parse_urdf(str(path), sim.ModelBuilder(), floating=True)
    assert str(e.value) == (f"parse_urdf: {path}:2: <link name='base'>: body 'base' has no mass (no inertial and no "
                            f"geometry with volume) but its free joint to the world moves it; give it an inertial")
